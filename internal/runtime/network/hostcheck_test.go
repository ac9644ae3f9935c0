package network

import (
	"os"
	"testing"
)

// requireHost fails when BERTH_STRICT_HOST=1 (CI) and skips otherwise if the
// machine lacks root or the CNI plugins; the semantics of the test kit's
// hostcheck.Require, kept local until that package lands.
func requireHost(t *testing.T) {
	t.Helper()
	var missing string
	switch {
	case os.Geteuid() != 0:
		missing = "root"
	case !fileExists("/usr/lib/cni/bridge"):
		missing = "CNI plugins in /usr/lib/cni (apt-get install containernetworking-plugins)"
	default:
		return
	}
	if os.Getenv("BERTH_STRICT_HOST") == "1" {
		t.Fatalf("host prerequisite missing: %s", missing)
	}
	t.Skipf("host prerequisite missing: %s", missing)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
