package density

import (
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
)

// podCount is the density target: 100 pods on one node (the
// node's capacity is 110 pods and berth runs no system pods).
const podCount = 100

// selector picks the test's pods only.
const selector = "app=density"

// waitLimit only bounds a hung run (kubectl's --timeout); nothing is
// asserted about time.
const waitLimit = "15m"

// 100 pods on one node, applied with `berth kubectl`, all reach Running and
// Ready, each with its own pod IP from the node's podCIDR; deleted with
// `berth kubectl`, they all disappear, and the runtime is left with no
// container and no sandbox.
func TestHundredPodsOnOneNodeRunAndGo(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Runc, hostcheck.CNIPlugins, hostcheck.BusyboxStatic, hostcheck.Overlayfs, hostcheck.Gcc)
	c := startCluster(t)
	ctx := t.Context()

	out := c.Kubectl(t, podList(t, podCount), "apply", "-f", "-")
	if created := strings.Count(out, " created"); created != podCount {
		t.Fatalf("kubectl apply created %d pods, want %d:\n%s", created, podCount, out)
	}
	c.Kubectl(t, "", "wait", "--for=condition=Ready", "pod", "-l", selector, "--timeout="+waitLimit)
	list, err := c.client.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if n := countRunningReady(list.Items); len(list.Items) != podCount || n != podCount {
		t.Fatalf("%d of %d pods Running and Ready with their container running, never restarted; %s", n, podCount, summarize(list.Items))
	}
	node, err := c.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkPlacementAndAddresses(t, list.Items, node.Spec.PodCIDR)

	// kubectl delete waits until the objects are gone, which the agent
	// brings about only after stopping the containers and removing the
	// sandboxes.
	c.Kubectl(t, "", "delete", "pod", "-l", selector, "--timeout="+waitLimit)
	list, err = c.client.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("after kubectl delete: %s", summarize(list.Items))
	}
	checkRuntimeEmpty(t, c)
}

// podList is a v1 List of n density pods, as kubectl apply -f reads it.
func podList(t *testing.T, n int) string {
	t.Helper()
	items := make([]*corev1.Pod, n)
	for i := range items {
		items[i] = densityPod(i)
	}
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// densityPod is a busybox that sleeps and exits at once on SIGTERM (a
// plain `sleep` as PID 1 would ignore it and wait for the grace period's
// SIGKILL). The image is used if present, so the 100 pods share one pull.
func densityPod(i int) *corev1.Pod {
	grace := int64(10)
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("density-%03d", i), Labels: map[string]string{"app": "density"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "sleep", Image: images.Busybox, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
			}},
		},
	}
}

// countRunningReady counts the pods in phase Running whose Ready condition
// is True and whose one container is running and ready, never restarted.
func countRunningReady(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		if runningReady(&pods[i]) {
			n++
		}
	}
	return n
}

func runningReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || !conditionTrue(p, corev1.PodReady) || len(p.Status.ContainerStatuses) != 1 {
		return false
	}
	cs := p.Status.ContainerStatuses[0]
	return cs.Ready && cs.State.Running != nil && cs.RestartCount == 0
}

func conditionTrue(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// checkPlacementAndAddresses: every pod on the node, each with an address
// of its own inside the node's podCIDR.
func checkPlacementAndAddresses(t *testing.T, pods []corev1.Pod, podCIDR string) {
	t.Helper()
	_, cidr, err := net.ParseCIDR(podCIDR)
	if err != nil {
		t.Fatalf("node podCIDR %q: %v", podCIDR, err)
	}
	owner := map[string]string{}
	for _, p := range pods {
		if p.Spec.NodeName != nodeName {
			t.Errorf("pod %s on node %q, want %q", p.Name, p.Spec.NodeName, nodeName)
		}
		ip := net.ParseIP(p.Status.PodIP)
		if ip == nil || !cidr.Contains(ip) {
			t.Errorf("pod %s has IP %q, not in the node's podCIDR %s", p.Name, p.Status.PodIP, podCIDR)
		}
		if other, dup := owner[p.Status.PodIP]; dup {
			t.Errorf("pods %s and %s share IP %s", other, p.Name, p.Status.PodIP)
		}
		owner[p.Status.PodIP] = p.Name
	}
}

// checkRuntimeEmpty: the agent stopped every container and removed every
// sandbox before it deleted the pod objects.
func checkRuntimeEmpty(t *testing.T, c *testCluster) {
	t.Helper()
	rt := c.runtimeClient(t).Runtime
	sandboxes, err := rt.ListPodSandbox(t.Context(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	containers, err := rt.ListContainers(t.Context(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sandboxes.Items) != 0 || len(containers.Containers) != 0 {
		t.Errorf("after deletion the runtime still has %d sandboxes and %d containers", len(sandboxes.Items), len(containers.Containers))
	}
}

// summarize counts pods by state, for failure messages.
func summarize(pods []corev1.Pod) string {
	counts := map[string]int{}
	for i := range pods {
		counts[stateOf(&pods[i])]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, counts[k]))
	}
	return fmt.Sprintf("%d pods (%s)", len(pods), strings.Join(parts, ", "))
}

func stateOf(p *corev1.Pod) string {
	switch {
	case p.DeletionTimestamp != nil:
		return "Terminating"
	case runningReady(p):
		return "Running+Ready"
	case len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil:
		return string(p.Status.Phase) + "/" + p.Status.ContainerStatuses[0].State.Waiting.Reason
	default:
		return string(p.Status.Phase)
	}
}
