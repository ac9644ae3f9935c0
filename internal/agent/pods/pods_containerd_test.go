package pods

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth/berth/internal/agent/podcgroup"
	"github.com/berth/berth/internal/agent/podcgroup/podcgrouptest"
	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/wait"
)

const testNode = "node-a"

// harness is one agent pod Manager against a private containerd, with the
// API played by client-go's fake clientset.
type harness struct {
	t      *testing.T
	ctd    *cri.Containerd
	client *fake.Clientset
	clock  *testingclock.FakeClock
	cfg    Config
	// manager is the one startAgent last started.
	manager *Manager

	mu    sync.Mutex
	syncs map[types.UID]int
}

func newHarness(t *testing.T) *harness {
	ctd := cri.Start(t)
	h := &harness{
		t: t, ctd: ctd, client: fake.NewClientset(),
		clock: testingclock.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)),
		syncs: map[types.UID]int{},
	}
	h.cfg = Config{
		NodeName: testNode, NodeIP: "127.0.0.1", DataDir: t.TempDir(), PodLogDir: t.TempDir(),
		RuntimeName: ctd.Version.RuntimeName, RelistPeriod: 100 * time.Millisecond, ResyncPeriod: time.Second,
		Clock: h.clock, Cgroups: podcgroup.NewCleaner(podcgroup.HostOS{}, nil),
	}
	// Memory emptyDirs are tmpfs mounts the agent leaves for its next run.
	t.Cleanup(func() { cri.UnmountUnder(h.cfg.DataDir) })
	return h
}

// startAgent runs a Manager until the returned stop is called (or the test ends).
func (h *harness) startAgent() (stop func()) {
	m := New(h.cfg, h.client, h.ctd.Client.Runtime, h.ctd.Client.Images, slog.New(slog.NewTextHandler(testWriter{h.t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	h.manager = m
	m.afterSync = func(uid types.UID, _ error) {
		h.mu.Lock()
		h.syncs[uid]++
		h.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				h.t.Errorf("agent Run: %v", err)
			}
		})
	}
	h.t.Cleanup(stop)
	return stop
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (h *harness) syncCount(uid types.UID) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.syncs[uid]
}

func (h *harness) create(pod *corev1.Pod) *corev1.Pod {
	h.t.Helper()
	pod.Spec.NodeName = testNode
	if pod.UID == "" {
		pod.UID = types.UID("uid-" + pod.Name)
	}
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	if pod.Spec.RestartPolicy == "" {
		pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].TerminationMessagePath == "" {
			pod.Spec.Containers[i].TerminationMessagePath = corev1.TerminationMessagePathDefault
		}
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
	created, err := h.client.CoreV1().Pods(pod.Namespace).Create(h.t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return created
}

// waitPod polls the pod until cond holds, failing with the last status.
func (h *harness) waitPod(pod *corev1.Pod, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	h.t.Helper()
	var last *corev1.Pod
	err := wait.PollTrue(h.t.Context(), 90*time.Second, "pod "+pod.Name+" "+what, func(ctx context.Context) (bool, error) {
		p, err := h.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		if last == nil {
			h.t.Fatal(err)
		}
		h.t.Fatalf("%v; last status: %+v", err, last.Status)
	}
	return last
}

func busybox(name string, cmd ...string) corev1.Container {
	return corev1.Container{Name: name, Image: cri.Image(images.Busybox), Command: cmd}
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func (h *harness) containers(uid types.UID) []*runtimeapi.Container {
	h.t.Helper()
	resp, err := h.ctd.Client.Runtime.ListContainers(h.t.Context(), &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{labelPodUID: string(uid)}},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.Containers
}

func (h *harness) containerID(p *corev1.Pod, name string) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			_, id, _ := strings.Cut(cs.ContainerID, "://")
			return id
		}
	}
	h.t.Fatalf("no status for container %s", name)
	return ""
}

func (h *harness) exec(id string, cmd ...string) string {
	h.t.Helper()
	resp, err := h.ctd.Client.Runtime.ExecSync(h.t.Context(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 10})
	if err != nil || resp.ExitCode != 0 {
		h.t.Fatalf("exec %v: %v (exit %d, stderr %s)", cmd, err, resp.GetExitCode(), resp.GetStderr())
	}
	return string(resp.Stdout)
}

func TestPodWithInitContainerAndEnvRunsAndIsReady(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default"},
		Data:       map[string]string{"MODE": "fast", "LEVEL": "3"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "default"},
		Data:       map[string][]byte{"password": []byte("s3cret")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.startAgent()
	app := busybox("app", "sleep", "$(SLEEP_FOR)") // expanded by the agent, as upstream
	app.Env = []corev1.EnvVar{
		{Name: "PLAIN", Value: "value-1"},
		{Name: "SLEEP_FOR", Value: "3600"},
		{Name: "DERIVED", Value: "$(PLAIN)-x"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
		{Name: "MODE_KEY", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "MODE"}}},
	}
	app.EnvFrom = []corev1.EnvFromSource{{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
	app.WorkingDir = "/tmp"
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{busybox("setup", "sh", "-c", "echo init done")},
			Containers:     []corev1.Container{app, busybox("sidecar", "sleep", "3600")},
		},
	})

	p := h.waitPod(pod, "Running and Ready", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady} {
		if podCondition(p, ct) != corev1.ConditionTrue {
			t.Errorf("condition %s = %q, want True", ct, podCondition(p, ct))
		}
	}
	if !strings.HasPrefix(p.Status.PodIP, "10.231.0.") || p.Status.HostIP != "127.0.0.1" || p.Status.StartTime == nil {
		t.Errorf("podIP %q hostIP %q startTime %v", p.Status.PodIP, p.Status.HostIP, p.Status.StartTime)
	}
	if p.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("qosClass = %q", p.Status.QOSClass)
	}
	init := p.Status.InitContainerStatuses[0]
	if init.State.Terminated == nil || init.State.Terminated.ExitCode != 0 || init.State.Terminated.Reason != "Completed" || !init.Ready {
		t.Errorf("init container status = %+v", init)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil || !cs.Ready || cs.Started == nil || !*cs.Started || cs.RestartCount != 0 ||
			!strings.HasPrefix(cs.ContainerID, "containerd://") || cs.ImageID == "" {
			t.Errorf("container status = %+v", cs)
		}
	}

	// What reached the runtime: the kubelet's labels, env, working dir.
	sbs, err := h.ctd.Client.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodUID: string(pod.UID)}},
	})
	if err != nil || len(sbs.Items) != 1 {
		t.Fatalf("sandboxes = %v, %v; want one", sbs, err)
	}
	if l := sbs.Items[0].Labels; l[labelPodName] != "web" || l[labelPodNamespace] != "default" || l["app"] != "web" {
		t.Errorf("sandbox labels = %v", l)
	}
	id := h.containerID(p, "app")
	env := h.exec(id, "env")
	for _, want := range []string{"PLAIN=value-1", "DERIVED=value-1-x", "POD_NAME=web", "PASSWORD=s3cret", "MODE_KEY=fast", "CM_MODE=fast", "CM_LEVEL=3"} {
		if !strings.Contains(env, want+"\n") {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
	if wd := strings.TrimSpace(h.exec(id, "pwd")); wd != "/tmp" {
		t.Errorf("working dir = %q", wd)
	}
	if hn := strings.TrimSpace(h.exec(id, "hostname")); hn != "web" {
		t.Errorf("hostname = %q", hn)
	}
	// cgroup v1 here: the memory hierarchy shows the QoS class's parent.
	if cg := h.exec(id, "cat", "/proc/self/cgroup"); !strings.Contains(cg, "/kubepods/besteffort/pod"+string(pod.UID)+"/") {
		t.Errorf("container cgroups not under the BestEffort pod cgroup:\n%s", cg)
	}
}

func TestCrashingContainerBacksOffWithGrowingDelay(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crasher"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{busybox("c", "sh", "-c", "echo dying >/dev/termination-log; exit 3")}},
	})
	backingOff := func(restarts int32, delay string) func(*corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			if len(p.Status.ContainerStatuses) != 1 {
				return false
			}
			cs := p.Status.ContainerStatuses[0]
			w := cs.State.Waiting
			return cs.RestartCount == restarts && w != nil && w.Reason == "CrashLoopBackOff" &&
				strings.HasPrefix(w.Message, "back-off "+delay+" ")
		}
	}
	p := h.waitPod(pod, "in CrashLoopBackOff after one restart", backingOff(1, "10s"))
	last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.ExitCode != 3 || last.Reason != "Error" || last.Message != "dying\n" {
		t.Fatalf("lastState = %+v, want exit 3 with the termination message", last)
	}
	if p.Status.Phase != corev1.PodRunning || podCondition(p, corev1.PodReady) != corev1.ConditionFalse {
		t.Fatalf("phase %s ready %s, want Running and not ready", p.Status.Phase, podCondition(p, corev1.PodReady))
	}
	// The back-off ends on the agent's clock, and the next one is twice as long.
	h.clock.Step(10 * time.Second)
	h.waitPod(pod, "backing off 20s after two restarts", backingOff(2, "20s"))
	h.clock.Step(20 * time.Second)
	h.waitPod(pod, "backing off 40s after three restarts", backingOff(3, "40s"))
	// Only the newest dead instance and the one before it are kept.
	if n := len(h.containers(pod.UID)); n != 2 {
		t.Fatalf("runtime keeps %d instances, want 2", n)
	}
}

func TestMissingImageGivesErrImagePullThenImagePullBackOff(t *testing.T) {
	h := newHarness(t)
	w := h.watchPodsAndStartAgent()
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "noimage"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: cri.Image("berth-test/does-not-exist:latest"),
		}}},
	})
	h.waitReasons(w, pod.UID, reasonErrImagePull, reasonImagePullBackOff)
	p, _ := h.client.CoreV1().Pods("default").Get(t.Context(), "noimage", metav1.GetOptions{})
	if p.Status.Phase != corev1.PodPending {
		t.Fatalf("phase = %s, want Pending", p.Status.Phase)
	}
	// When the back-off ends on the agent's clock it pulls again, fails again
	// and backs off again.
	h.clock.Step(10 * time.Second)
	h.waitReasons(w, pod.UID, reasonErrImagePull, reasonImagePullBackOff)
}

// watchPodsAndStartAgent watches the pods (for the test's life), then
// starts the agent, so that the watch sees every status the agent reports.
func (h *harness) watchPodsAndStartAgent() watch.Interface {
	h.t.Helper()
	w, err := h.client.CoreV1().Pods("default").Watch(h.t.Context(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(w.Stop)
	h.startAgent()
	return w
}

// waitReasons reads pod events from w until the pod's first container has
// shown the waiting reasons want, consecutively and in order.
func (h *harness) waitReasons(w watch.Interface, uid types.UID, want ...string) {
	h.t.Helper()
	var seen []string
	timeout := time.After(90 * time.Second)
	for {
		if n := len(seen); n >= len(want) && slices.Equal(seen[n-len(want):], want) {
			return
		}
		select {
		case ev := <-w.ResultChan():
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || p.UID != uid || len(p.Status.ContainerStatuses) == 0 {
				continue
			}
			if wt := p.Status.ContainerStatuses[0].State.Waiting; wt != nil && (len(seen) == 0 || seen[len(seen)-1] != wt.Reason) {
				seen = append(seen, wt.Reason)
			}
		case <-timeout:
			h.t.Fatalf("waiting reasons seen %v, want %v at the end", seen, want)
		}
	}
}

func TestDeletionStopsContainersGracefullyAndDeletesPod(t *testing.T) {
	h := newHarness(t)
	w := h.watchPodsAndStartAgent()
	grace := int64(60)
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "graceful"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "c", Image: cri.Image(images.Busybox),
				Command: []string{"sh", "-c",
					`trap 'echo got TERM >/dev/termination-log; exit 0' TERM; touch /tmp/trapped; while true; do sleep 0.2; done`},
				// Ready only once the trap is set, so SIGTERM cannot come first.
				ReadinessProbe: execProbe("cat", "/tmp/trapped"),
			}},
		},
	})
	p := h.waitPod(pod, "Ready", func(p *corev1.Pod) bool { return podCondition(p, corev1.PodReady) == corev1.ConditionTrue })
	if dirs := podcgrouptest.HostPodDirs(t, string(pod.UID)); len(dirs) == 0 {
		t.Fatal("the running pod has no cgroup under its cgroup parent")
	}

	// What the API server does on a graceful delete: set the deletion
	// timestamp and grace period, and leave the final delete to the node.
	now := metav1.Now()
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &grace
	if _, err := h.client.CoreV1().Pods("default").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var final *corev1.Pod
	timeout := time.After(90 * time.Second)
	for deleted := false; !deleted; {
		select {
		case ev := <-w.ResultChan():
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || p.UID != pod.UID {
				continue
			}
			if ev.Type == "DELETED" {
				deleted = true
			} else {
				final = p
			}
		case <-timeout:
			t.Fatal("pod was never deleted")
		}
	}
	cs := final.Status.ContainerStatuses[0]
	if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 || cs.State.Terminated.Message != "got TERM\n" {
		t.Fatalf("final container state = %+v, want exit 0 after handling SIGTERM", cs.State)
	}
	if _, err := h.client.CoreV1().Pods("default").Get(t.Context(), "graceful", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod still in the API: %v", err)
	}
	err := wait.PollTrue(t.Context(), 30*time.Second, "the pod's sandbox to leave the runtime", func(ctx context.Context) (bool, error) {
		sbs, err := h.ctd.Client.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
			Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodUID: string(pod.UID)}},
		})
		return err == nil && len(sbs.Items) == 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The runtime never removes the pod's cgroup: the worker does, in
	// every hierarchy, before it deletes the pod.
	if dirs := podcgrouptest.HostPodDirs(t, string(pod.UID)); len(dirs) != 0 {
		t.Errorf("the deleted pod's cgroup is left: %v", dirs)
	}
}

func TestAgentRestartRestartsNothing(t *testing.T) {
	h := newHarness(t)
	stop := h.startAgent()
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "steady"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{busybox("setup", "true")},
			Containers:     []corev1.Container{busybox("a", "sleep", "3600"), busybox("b", "sleep", "3600")},
		},
	})
	before := h.waitPod(pod, "Running and Ready", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	idsBefore := map[string]bool{}
	for _, c := range h.containers(pod.UID) {
		idsBefore[c.Id] = true
	}
	stop() // the agent goes away with everything it had in memory

	patchesBefore := statusPatches(h.client)
	h.startAgent()
	syncsBefore := h.syncCount(pod.UID)
	err := wait.PollTrue(t.Context(), 60*time.Second, "the restarted agent to sync the pod three times", func(context.Context) (bool, error) {
		return h.syncCount(pod.UID) >= syncsBefore+3, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	after, err := h.client.CoreV1().Pods("default").Get(t.Context(), "steady", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	idsAfter := map[string]bool{}
	for _, c := range h.containers(pod.UID) {
		idsAfter[c.Id] = true
		if c.Metadata.Attempt != 0 {
			t.Errorf("container %s attempt %d after the agent restart", c.Metadata.Name, c.Metadata.Attempt)
		}
	}
	if len(idsAfter) != len(idsBefore) {
		t.Fatalf("runtime containers before %v, after %v", idsBefore, idsAfter)
	}
	for id := range idsBefore {
		if !idsAfter[id] {
			t.Fatalf("container %s replaced after the agent restart", id)
		}
	}
	for i, cs := range after.Status.ContainerStatuses {
		b := before.Status.ContainerStatuses[i]
		if cs.ContainerID != b.ContainerID || cs.RestartCount != 0 || cs.State.Running == nil ||
			!cs.State.Running.StartedAt.Equal(&b.State.Running.StartedAt) {
			t.Errorf("container %s status changed across the agent restart: %+v -> %+v", cs.Name, b, cs)
		}
	}
	if after.Status.Phase != corev1.PodRunning || podCondition(after, corev1.PodReady) != corev1.ConditionTrue {
		t.Errorf("after restart: phase %s ready %s", after.Status.Phase, podCondition(after, corev1.PodReady))
	}
	// Nothing changed, so the restarted agent computed, compared, and sent nothing.
	if n := statusPatches(h.client) - patchesBefore; n != 0 {
		t.Errorf("restarted agent sent %d status patches for an unchanged pod", n)
	}
}

func statusPatches(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func TestCompletedPodSucceeds(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job"},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{busybox("c", "true")}},
	})
	p := h.waitPod(pod, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if cs := p.Status.ContainerStatuses[0]; cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" || cs.RestartCount != 0 {
		t.Fatalf("container status %+v", cs)
	}
	if podCondition(p, corev1.PodReady) != corev1.ConditionFalse {
		t.Fatal("a completed pod is Ready")
	}
	err := wait.PollTrue(t.Context(), 30*time.Second, "the completed pod's sandbox to be stopped", func(ctx context.Context) (bool, error) {
		sbs, err := h.ctd.Client.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
			Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodUID: string(pod.UID)}},
		})
		return err == nil && len(sbs.Items) == 1 && sbs.Items[0].State == runtimeapi.PodSandboxState_SANDBOX_NOTREADY, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func execReq(id string, cmd ...string) *runtimeapi.ExecSyncRequest {
	return &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 10}
}

func readFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	return string(data), err
}

// TestRuntimeRestartRestartsNothing: containerd restarted under a running
// agent; the agent rides out the gap and restarts no container.
func TestRuntimeRestartRestartsNothing(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "steady"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{busybox("a", "sleep", "3600"), busybox("b", "sleep", "3600")}},
	})
	before := h.waitPod(pod, "Running and Ready", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	patchesBefore := statusPatches(h.client)
	h.ctd.Restart(t)
	syncsBefore := h.syncCount(pod.UID)
	if err := wait.PollTrue(t.Context(), 60*time.Second, "the agent to sync the pod three times after the runtime restart", func(context.Context) (bool, error) {
		return h.syncCount(pod.UID) >= syncsBefore+3, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range h.containers(pod.UID) {
		if c.Metadata.Attempt != 0 || c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("container %s: attempt %d state %s after the runtime restart", c.Metadata.Name, c.Metadata.Attempt, c.State)
		}
		if c.Id != h.containerID(before, c.Metadata.Name) {
			t.Errorf("container %s replaced", c.Metadata.Name)
		}
	}
	if n := statusPatches(h.client) - patchesBefore; n != 0 {
		t.Errorf("%d status patches for a pod that did not change", n)
	}
}
