package critestcheck

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/registry"
)

// focus selects critest's specs that depend on what is inside the kit's
// images (nginx stand-in, httpd, nonewprivs, ipcs, users and groups, masked
// applets, image names, tags and IDs, pause under two registries).
const focus = `Image Manager|Image Consistency|NamespaceOption|NoNewPrivs|MaskedPaths|RunAsUser|SupplementalGroups|Multiple Containers`

// skip: the one image spec that cannot pass offline (it pulls by an
// upstream manifest digest no local image can have).
const skip = `public image with digest`

// mustPass are (parts of) the full names of specs that each exercise one kit image; they must run and pass.
var mustPass = []string{
	"runtime should support HostPID",                                                // nginx: nginx.pid, pidof
	"runtime should support ContainerPID",                                           // nginx: "master process"
	"runtime should support HostIpc is true",                                        // ipcs
	"should support MaskedPaths",                                                    // applets exec, hard links
	"should not allow privilege escalation when true",                               // nonewprivs
	"should support container log",                                                  // httpd log line
	"removing image from one registry should remove all tags from other registries", // pause x2
	"listImage should get exactly 3 repoTags in the result image",                   // test-image-tags
	"image status get image fields should not have Uid|Username empty",              // user images
}

type ginkgoReport struct {
	SpecReports []struct {
		ContainerHierarchyTexts []string
		LeafNodeText            string
		LeafNodeType            string
		State                   string
		Failure                 struct{ Message string }
	}
}

func TestCritestImageSpecsPassAgainstContainerd(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Runc, hostcheck.CNIPlugins, hostcheck.Containerd,
		hostcheck.Overlayfs, hostcheck.Gcc, hostcheck.Critest, hostcheck.Crictl)
	tools, err := hostcheck.ToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	bb, err := images.FetchDebianBusybox(t.Context(), filepath.Join(tools, "debian-busybox"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := images.CritestCatalogue(t.Context(), images.CritestOptions{DebianBusybox: bb})
	if err != nil {
		t.Fatal(err)
	}
	host := registry.Start(t)
	registry.Push(t, host, set)

	// Not t.TempDir: containerd's tree must outlive containerd's own cleanup,
	// which t.Cleanup runs after TempDir removal would be registered.
	dir, err := os.MkdirTemp("", "berth-critestcheck-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctd := startContainerd(t, dir, host, filepath.Join(tools, "crictl"))

	report := filepath.Join(dir, "critest.json")
	cmd := exec.CommandContext(t.Context(), "nsenter", "--ipc="+ctd.ipcNamespace(), "--",
		filepath.Join(tools, "critest"),
		"--runtime-endpoint", ctd.endpoint(), "--image-endpoint", ctd.endpoint(),
		"--ginkgo.focus", focus, "--ginkgo.skip", skip,
		"--ginkgo.json-report", report, "--ginkgo.no-color")
	cmd.Dir = dir
	out, runErr := cmd.CombinedOutput()

	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("critest wrote no report (%v): %v\n%s", runErr, err, tail(out))
	}
	var reports []ginkgoReport
	if err := json.Unmarshal(data, &reports); err != nil || len(reports) != 1 {
		t.Fatalf("critest report: %v (%d suites)", err, len(reports))
	}
	var passed, failed []string
	for _, s := range reports[0].SpecReports {
		if s.LeafNodeType != "It" {
			continue
		}
		name := strings.Join(append(s.ContainerHierarchyTexts, s.LeafNodeText), " ")
		switch s.State {
		case "passed":
			passed = append(passed, name)
		case "skipped", "pending":
		default:
			failed = append(failed, name+": "+s.State+": "+s.Failure.Message)
		}
	}
	for _, f := range failed {
		t.Errorf("critest spec failed with the kit's images: %s", f)
	}
	for _, want := range mustPass {
		if !containsSubstring(passed, want) {
			t.Errorf("spec %q did not run and pass", want)
		}
	}
	t.Logf("critest against containerd: %d image-dependent specs passed, %d failed", len(passed), len(failed))
	if t.Failed() {
		t.Logf("critest output:\n%s", tail(out))
	}
}

func containsSubstring(names []string, sub string) bool {
	for _, n := range names {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}
