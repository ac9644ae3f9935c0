package apiserver

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	kubectlcmd "k8s.io/kubectl/pkg/cmd"
)

// The kubectl tests run the real upstream kubectl with default flags, as a
// child process of this test binary (its os.Exit and global flags stay out
// of the tests), against the full API server.
const runKubectlEnv = "BERTH_APISERVER_TEST_RUN_KUBECTL"

func TestMain(m *testing.M) {
	if os.Getenv(runKubectlEnv) == "1" {
		cmd := kubectlcmd.NewDefaultKubectlCommand()
		cmd.SetArgs(os.Args[1:])
		if err := cmd.Execute(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// kubectlRunner runs kubectl against one test server.
type kubectlRunner struct {
	t          *testing.T
	dir        string
	kubeconfig string
}

func newKubectl(t *testing.T, s *testServer) *kubectlRunner {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]
current-context: c
`, s.url)
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return &kubectlRunner{t: t, dir: dir, kubeconfig: kubeconfig}
}

// run returns kubectl's combined output and whether it exited 0.
func (k *kubectlRunner) run(stdin string, env []string, args ...string) (string, bool) {
	k.t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", filepath.Join(k.dir, "cache")}, args...)...)
	cmd.Env = append(append(os.Environ(), runKubectlEnv+"=1", "HOME="+k.dir, "KUBECONFIG="), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		k.t.Fatalf("running kubectl: %v", err)
	}
	return out.String(), err == nil
}

// must runs kubectl and fails the test unless it succeeds with every want in its output.
func (k *kubectlRunner) must(stdin string, args []string, wants ...string) string {
	k.t.Helper()
	out, ok := k.run(stdin, nil, args...)
	if !ok {
		k.t.Fatalf("kubectl %s failed:\n%s", strings.Join(args, " "), out)
	}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			k.t.Fatalf("kubectl %s: output lacks %q:\n%s", strings.Join(args, " "), w, out)
		}
	}
	return out
}

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
	s := newTestServer(t)
	k := newKubectl(t, s)
	// The pod is created bound, so its node must exist and have room.
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus: {capacity: {cpu: '2', pods: '110'}, allocatable: {cpu: '2', pods: '110'}}\n"
	k.must(node, []string{"create", "-f", "-"}, "node/node-1 created")
	k.must("", []string{"get", "nodes"}, "NAME", "STATUS", "ROLES", "AGE", "VERSION", "node-1")
	k.must("", []string{"get", "node", "node-1", "-o", "jsonpath={.status.capacity.pods}"}, "110")
	k.must(kubectlPod, []string{"create", "-f", "-"}, "pod/web created")
	k.must("", []string{"get", "pods"}, "NAME", "READY", "STATUS", "RESTARTS", "AGE", "web", "0/1", "Pending")
	k.must("", []string{"get", "pods", "-o", "wide"}, "IP", "NODE", "node-1")
	k.must("", []string{"get", "pod", "web", "-o", "yaml"}, "imagePullPolicy: IfNotPresent", "restartPolicy: Always")
	k.must("", []string{"get", "pod", "web", "-o", "json"}, `"terminationMessagePath": "/dev/termination-log"`)
	k.must("", []string{"describe", "pod", "web"}, "Name:", "web", "Node:", "node-1", "busybox:1.36")
	k.must("", []string{"label", "pod", "web", "tier=front"}, "pod/web labeled")
	k.must("", []string{"annotate", "pod", "web", "note=hi"}, "pod/web annotated")
	k.must("", []string{"patch", "pod", "web", "-p", `{"spec":{"containers":[{"name":"app","image":"busybox:1.37"}]}}`}, "pod/web patched")
	k.must("", []string{"get", "pod", "web", "-o", "jsonpath={.spec.containers[0].image} {.metadata.labels.tier} {.metadata.annotations.note}"}, "busybox:1.37 front hi")

	// apply: create, then change.
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: a}\n"
	k.must(cm, []string{"apply", "-f", "-"}, "configmap/settings created")
	k.must(strings.Replace(cm, "mode: a", "mode: b", 1), []string{"apply", "-f", "-"}, "configmap/settings configured")
	k.must("", []string{"get", "configmap", "settings", "-o", "jsonpath={.data.mode}"}, "b")
	// edit through $EDITOR.
	out, ok := k.run("", []string{"EDITOR=sed -i s/mode:\\ b/mode:\\ c/"}, "edit", "configmap", "settings")
	if !ok || !strings.Contains(out, "configmap/settings edited") {
		t.Fatalf("kubectl edit:\n%s", out)
	}
	k.must("", []string{"get", "configmap", "settings", "-o", "jsonpath={.data.mode}"}, "c")

	k.must("", []string{"create", "namespace", "scratch"}, "namespace/scratch created")
	k.must("", []string{"create", "secret", "generic", "token", "--from-literal=k=v", "-n", "scratch"}, "secret/token created")
	k.must("", []string{"get", "namespaces"}, "default", "kube-system", "kube-node-lease", "scratch", "Active")
	k.must("", []string{"explain", "pod.spec"}, "containers", "nodeName")

	// A bound pod's deletion waits for its node; finish it as the agent would.
	k.must("", []string{"delete", "pod", "web", "--wait=false"}, `pod "web" deleted`)
	k.must("", []string{"delete", "pod", "web", "--grace-period=0", "--force"}, "")
	k.must("", []string{"wait", "--for=delete", "pod/web", "--timeout=30s"})
	k.must("", []string{"delete", "namespace", "scratch"}, `namespace "scratch" deleted`)

	// Bad input gets a one-line error and a non-zero exit.
	out, ok = k.run("apiVersion: v1\nkind: Pod\nmetadata: {name: empty}\nspec: {containers: []}\n", nil, "create", "-f", "-")
	if ok || !strings.Contains(out, "spec.containers: Required value") {
		t.Fatalf("kubectl create of a pod without containers: ok=%v\n%s", ok, out)
	}
}
