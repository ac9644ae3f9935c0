package podcgroup_test

import (
	"errors"
	"slices"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth/berth/internal/agent/podcgroup"
	"github.com/berth/berth/internal/agent/podcgroup/podcgrouptest"
)

// The hierarchies of a hybrid v1 host: controllers, a named one and the
// unified (v2) one.
var hierarchies = []string{"/cg/memory", "/cg/pids", "/cg/cpu,cpuacct", "/cg/systemd", "/cg/unified"}

func TestParentIsTheKubeletsCgroupfsLayout(t *testing.T) {
	for qos, want := range map[corev1.PodQOSClass]string{
		corev1.PodQOSGuaranteed: "/kubepods/podu1",
		corev1.PodQOSBurstable:  "/kubepods/burstable/podu1",
		corev1.PodQOSBestEffort: "/kubepods/besteffort/podu1",
	} {
		if got := podcgroup.Parent(qos, "u1"); got != want {
			t.Errorf("Parent(%s) = %q, want %q", qos, got, want)
		}
	}
}

func TestRemovePodRemovesItsCgroupInEveryHierarchy(t *testing.T) {
	fs := podcgrouptest.New(hierarchies...)
	for _, h := range hierarchies {
		fs.Mkdir(h+"/kubepods/besteffort/podgone", false)
		fs.Mkdir(h+"/kubepods/burstable/podother", true)
		fs.Mkdir(h+"/kubepods/podguaranteed", false)
	}
	c := podcgroup.NewCleaner(fs, nil)
	removed, err := c.RemovePod("gone")
	if err != nil || removed != len(hierarchies) {
		t.Fatalf("RemovePod = %d, %v; want %d, nil", removed, err, len(hierarchies))
	}
	if removed, err := c.RemovePod("guaranteed"); err != nil || removed != len(hierarchies) {
		t.Fatalf("RemovePod(guaranteed) = %d, %v; want %d, nil", removed, err, len(hierarchies))
	}
	for _, h := range hierarchies {
		if got, want := fs.Under(h), []string{h + "/kubepods", h + "/kubepods/besteffort", h + "/kubepods/burstable", h + "/kubepods/burstable/podother"}; !slices.Equal(got, want) {
			t.Errorf("left in %s: %v, want %v (the QoS parents and the other pod)", h, got, want)
		}
	}
	// Gone already: nothing to do, no error.
	if removed, err := c.RemovePod("gone"); err != nil || removed != 0 {
		t.Errorf("RemovePod again = %d, %v; want 0, nil", removed, err)
	}
}

func TestRemovePodKeepsACgroupInUse(t *testing.T) {
	fs := podcgrouptest.New("/cg/memory", "/cg/pids")
	fs.Mkdir("/cg/memory/kubepods/burstable/podbusy/ctr", true)
	fs.Mkdir("/cg/pids/kubepods/burstable/podbusy", true)
	c := podcgroup.NewCleaner(fs, nil)
	removed, err := c.RemovePod("busy")
	if err != nil || removed != 0 {
		t.Fatalf("RemovePod = %d, %v; want 0, nil (in use is not a failure)", removed, err)
	}
	for _, dir := range []string{"/cg/memory/kubepods/burstable/podbusy/ctr", "/cg/pids/kubepods/burstable/podbusy"} {
		if !fs.Exists(dir) {
			t.Errorf("%s removed while in use", dir)
		}
	}
	// Once its processes are gone, a later removal takes it.
	fs.SetBusy("/cg/memory/kubepods/burstable/podbusy/ctr", false)
	fs.SetBusy("/cg/pids/kubepods/burstable/podbusy", false)
	if removed, err := c.RemovePod("busy"); err != nil || removed != 2 {
		t.Fatalf("RemovePod once idle = %d, %v; want 2, nil", removed, err)
	}
}

func TestRemovePodRemovesEmptyDescendantsDeepestFirst(t *testing.T) {
	fs := podcgrouptest.New("/cg/memory")
	pod := "/cg/memory/kubepods/besteffort/podstale"
	fs.Mkdir(pod+"/sandbox", false)
	fs.Mkdir(pod+"/ctr/nested", false)
	c := podcgroup.NewCleaner(fs, nil)
	if removed, err := c.RemovePod("stale"); err != nil || removed != 1 {
		t.Fatalf("RemovePod = %d, %v; want 1, nil", removed, err)
	}
	want := []string{pod + "/ctr/nested", pod + "/ctr", pod + "/sandbox", pod}
	if got := fs.Removed(); !slices.Equal(got, want) {
		t.Errorf("removed %v, want %v", got, want)
	}
}

func TestRemovePodWithoutWriteAccessFailsWithoutRemoving(t *testing.T) {
	fs := podcgrouptest.New("/cg/memory")
	fs.Mkdir("/cg/memory/kubepods/besteffort/podro", false)
	fs.SetReadOnly(true)
	removed, err := podcgroup.NewCleaner(fs, nil).RemovePod("ro")
	if removed != 0 || !errors.Is(err, syscall.EROFS) {
		t.Fatalf("RemovePod = %d, %v; want 0 and EROFS", removed, err)
	}
}

func TestPodUIDsListsPodDirectoriesUnderEveryQoSParent(t *testing.T) {
	fs := podcgrouptest.New("/cg/memory", "/cg/unified")
	fs.Mkdir("/cg/memory/kubepods/podg", false)
	fs.Mkdir("/cg/memory/kubepods/burstable/podb", false)
	fs.Mkdir("/cg/unified/kubepods/besteffort/pode", false)
	fs.Mkdir("/cg/unified/kubepods/burstable/podb", false)
	fs.Mkdir("/cg/unified/kubepods/notapod", false)
	fs.Mkdir("/cg/unified/other/podx", false)
	got, err := podcgroup.NewCleaner(fs, nil).PodUIDs()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []types.UID{"b", "e", "g"}; !slices.Equal(got, want) {
		t.Errorf("PodUIDs = %v, want %v", got, want)
	}
}

func TestNilCleanerDoesNothing(t *testing.T) {
	var c *podcgroup.Cleaner
	if removed, err := c.RemovePod("u"); removed != 0 || err != nil {
		t.Errorf("RemovePod = %d, %v", removed, err)
	}
	if uids, err := c.PodUIDs(); uids != nil || err != nil {
		t.Errorf("PodUIDs = %v, %v", uids, err)
	}
}
