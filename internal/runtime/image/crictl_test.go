package image

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

// TestCrictlImageCommands drives the image service with the real crictl:
// pull, images, inspecti, imagefsinfo, rmi.
func TestCrictlImageCommands(t *testing.T) {
	hostcheck.Require(t, hostcheck.Crictl)
	tools, err := hostcheck.ToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	reg := startRegistry(t, nil)
	img := testImage(t, "www-data", layer(t, file("marker", "crictl")))
	reg.push(t, "test/crictl:1", img)
	s := newTestService(t, t.TempDir(), nil)
	sock := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterImageServiceServer(srv, s)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)

	crictl := func(args ...string) string {
		t.Helper()
		base := []string{"--image-endpoint", "unix://" + sock, "--runtime-endpoint", "unix://" + sock, "--timeout", "30s"}
		out, err := exec.CommandContext(context.Background(), filepath.Join(tools, "crictl"), append(base, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("crictl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	ref := reg.host + "/test/crictl:1"
	id := mustDigest(t, img.ConfigName)
	if out := crictl("pull", ref); !strings.Contains(out, id) {
		t.Fatalf("crictl pull printed %q, want the image ID %s", out, id)
	}
	if out := crictl("images"); !strings.Contains(out, reg.host+"/test/crictl") || !strings.Contains(out, id[len("sha256:"):len("sha256:")+13]) {
		t.Fatalf("crictl images does not list the image:\n%s", out)
	}
	if out := crictl("inspecti", ref); !strings.Contains(out, `"username": "www-data"`) {
		t.Fatalf("crictl inspecti:\n%s", out)
	}
	if out := crictl("imagefsinfo"); !strings.Contains(out, "usedBytes") {
		t.Fatalf("crictl imagefsinfo:\n%s", out)
	}
	crictl("rmi", ref)
	if out := crictl("images", "-q"); strings.Contains(out, id) {
		t.Fatalf("image still listed after crictl rmi:\n%s", out)
	}
}
