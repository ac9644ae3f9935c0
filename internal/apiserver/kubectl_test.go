package apiserver

import (
	"os"
	"strings"
	"testing"

	"github.com/berth/berth/internal/testkit/kubectltest"
)

func TestMain(m *testing.M) {
	kubectltest.RunIfChild()
	os.Exit(m.Run())
}

// newKubectl runs the real upstream kubectl (default flags) against s.
func newKubectl(t *testing.T, s *testServer) *kubectltest.Runner { return kubectltest.New(t, s.url) }

const kubectlPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  nodeName: node-1
  containers:
  - name: app
    image: busybox:1.36
`

func TestKubectl(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	startNamespaceController(t, s) // kubectl delete namespace waits for its removal
	k := newKubectl(t, s)
	// The pod is created bound, so its node must exist and have room.
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus: {capacity: {cpu: '2', pods: '110'}, allocatable: {cpu: '2', pods: '110'}}\n"
	k.Must(node, []string{"create", "-f", "-"}, "node/node-1 created")
	k.Must("", []string{"get", "nodes"}, "NAME", "STATUS", "ROLES", "AGE", "VERSION", "node-1")
	k.Must("", []string{"get", "node", "node-1", "-o", "jsonpath={.status.capacity.pods}"}, "110")
	k.Must(kubectlPod, []string{"create", "-f", "-"}, "pod/web created")
	k.Must("", []string{"get", "pods"}, "NAME", "READY", "STATUS", "RESTARTS", "AGE", "web", "0/1", "Pending")
	k.Must("", []string{"get", "pods", "-o", "wide"}, "IP", "NODE", "node-1")
	k.Must("", []string{"get", "pod", "web", "-o", "yaml"}, "imagePullPolicy: IfNotPresent", "restartPolicy: Always")
	k.Must("", []string{"get", "pod", "web", "-o", "json"}, `"terminationMessagePath": "/dev/termination-log"`)
	k.Must("", []string{"describe", "pod", "web"}, "Name:", "web", "Node:", "node-1", "busybox:1.36")
	k.Must("", []string{"label", "pod", "web", "tier=front"}, "pod/web labeled")
	k.Must("", []string{"annotate", "pod", "web", "note=hi"}, "pod/web annotated")
	k.Must("", []string{"patch", "pod", "web", "-p", `{"spec":{"containers":[{"name":"app","image":"busybox:1.37"}]}}`}, "pod/web patched")
	k.Must("", []string{"get", "pod", "web", "-o", "jsonpath={.spec.containers[0].image} {.metadata.labels.tier} {.metadata.annotations.note}"}, "busybox:1.37 front hi")

	// apply: create, then change.
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: a}\n"
	k.Must(cm, []string{"apply", "-f", "-"}, "configmap/settings created")
	k.Must(strings.Replace(cm, "mode: a", "mode: b", 1), []string{"apply", "-f", "-"}, "configmap/settings configured")
	k.Must("", []string{"get", "configmap", "settings", "-o", "jsonpath={.data.mode}"}, "b")
	// edit through $EDITOR.
	out, ok := k.Run("", []string{"EDITOR=sed -i s/mode:\\ b/mode:\\ c/"}, "edit", "configmap", "settings")
	if !ok || !strings.Contains(out, "configmap/settings edited") {
		t.Fatalf("kubectl edit:\n%s", out)
	}
	k.Must("", []string{"get", "configmap", "settings", "-o", "jsonpath={.data.mode}"}, "c")

	k.Must("", []string{"create", "namespace", "scratch"}, "namespace/scratch created")
	k.Must("", []string{"create", "secret", "generic", "token", "--from-literal=k=v", "-n", "scratch"}, "secret/token created")
	k.Must("", []string{"get", "namespaces"}, "default", "kube-system", "kube-node-lease", "scratch", "Active")
	k.Must("", []string{"explain", "pod.spec"}, "containers", "nodeName")

	// A bound pod's deletion waits for its node; finish it as the agent would.
	k.Must("", []string{"delete", "pod", "web", "--wait=false"}, `pod "web" deleted`)
	k.Must("", []string{"delete", "pod", "web", "--grace-period=0", "--force"}, "")
	k.Must("", []string{"wait", "--for=delete", "pod/web", "--timeout=30s"})
	k.Must("", []string{"delete", "namespace", "scratch"}, `namespace "scratch" deleted`)
	// A namespace stuck on a finalizer whose owner is gone, unstuck the way
	// users do it upstream: through namespaces/finalize.
	k.Must("apiVersion: v1\nkind: Namespace\nmetadata: {name: stuck}\nspec: {finalizers: [example.com/gone]}\n", []string{"create", "-f", "-"}, "namespace/stuck created")
	k.Must("", []string{"delete", "namespace", "stuck", "--wait=false"}, `namespace "stuck" deleted`)
	k.Must("", []string{"get", "namespace", "stuck", "-o", "jsonpath={.status.phase}"}, "Terminating")
	k.Must(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"stuck"},"spec":{"finalizers":[]}}`,
		[]string{"replace", "--raw", "/api/v1/namespaces/stuck/finalize", "-f", "-"}, `"name":"stuck"`)
	k.Must("", []string{"wait", "--for=delete", "namespace/stuck", "--timeout=30s"})

	// Bad input gets a one-line error and a non-zero exit.
	out, ok = k.Run("apiVersion: v1\nkind: Pod\nmetadata: {name: empty}\nspec: {containers: []}\n", nil, "create", "-f", "-")
	if ok || !strings.Contains(out, "spec.containers: Required value") {
		t.Fatalf("kubectl create of a pod without containers: ok=%v\n%s", ok, out)
	}
}
