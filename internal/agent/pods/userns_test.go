package pods

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestUsernsRangesAreDistinctAndOutliveTheAgent: pods get distinct ranges
// from 1 up (range 0 holds the host's users), a pod keeps its range, a new
// agent over the same directory hands out the same ranges, and a range is
// given again only once its pod is gone.
func TestUsernsRangesAreDistinctAndOutliveTheAgent(t *testing.T) {
	dir := t.TempDir()
	r := newUsernsRanges(dir)
	got := map[types.UID]uint32{}
	for _, uid := range []types.UID{"a", "b", "c"} {
		n, err := r.get(uid)
		if err != nil {
			t.Fatal(err)
		}
		got[uid] = n
	}
	if got["a"] != 1 || got["b"] != 2 || got["c"] != 3 {
		t.Fatalf("ranges %v, want a:1 b:2 c:3", got)
	}
	if n, _ := r.get("b"); n != 2 {
		t.Errorf("b asked again: range %d, want 2", n)
	}

	// A restarted agent: b's directory went with the pod, a's file is
	// corrupt (a's range is given again when a asks).
	if err := os.RemoveAll(filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "userns"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = newUsernsRanges(dir)
	if n, _ := r.get("c"); n != 3 {
		t.Errorf("c after a restart: range %d, want 3", n)
	}
	if n, _ := r.get("d"); n != 1 {
		t.Errorf("d: range %d, want 1, free since a's record is unreadable", n)
	}
	if n, _ := r.get("e"); n != 2 {
		t.Errorf("e: range %d, want 2, b's freed range", n)
	}
	r.release("c")
	if n, _ := r.get("f"); n != 3 {
		t.Errorf("f: range %d, want 3, c's released range", n)
	}
}

// TestOwnUsersRefusedByARuntimeWithoutUserNamespaces: containerd 1.6 does
// not offer user namespaces, so a pod with hostUsers: false never gets a
// sandbox there (one would run with the host's users) and says why.
func TestOwnUsersRefusedByARuntimeWithoutUserNamespaces(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	hostUsers := false
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "own-users"},
		Spec:       corev1.PodSpec{HostUsers: &hostUsers, Containers: []corev1.Container{busybox("c", "sleep", "3600")}},
	})
	h.waitPod(pod, "told the runtime lacks user namespaces", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			strings.Contains(p.Status.ContainerStatuses[0].State.Waiting.Message, "does not support user namespaces")
	})
	sbs, err := h.ctd.Client.Runtime.ListPodSandbox(t.Context(), &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodUID: string(pod.UID)}},
	})
	if err != nil || len(sbs.Items) != 0 {
		t.Errorf("the runtime holds sandboxes %v (%v) for a pod it cannot give its own users", sbs.GetItems(), err)
	}
}
