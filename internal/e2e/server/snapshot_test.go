package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/testkit/cluster"
)

// `berth snapshot save` backs up a running server's embedded store over the
// API (admin only); `berth snapshot restore` brings a stopped server back to
// exactly that state.
func TestSnapshotSaveAndRestore(t *testing.T) {
	bin := berthBin
	dir := t.TempDir()
	srv := cluster.Start(t, bin, cluster.Options{})
	dataDir, cs := srv.DataDir, srv.Admin
	ctx := context.Background()

	create := func(name string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("before-backup")

	backup := filepath.Join(dir, "backup.db")
	out := runBerth(t, bin, "snapshot", "save", "--kubeconfig", srv.Kubeconfig, backup)
	if !strings.Contains(out, "saved "+backup) {
		t.Fatalf("snapshot save: %s", out)
	}
	if st, err := os.Stat(backup); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, %v (want mode 0600)", st, err)
	}
	create("after-backup")

	// Restoring under the running server is refused and changes nothing.
	if out, err := exec.Command(bin, "snapshot", "restore", "--data-dir", dataDir, backup).CombinedOutput(); err == nil || !strings.Contains(string(out), "in use") {
		t.Fatalf("restore under a running server: err=%v\n%s", err, out)
	}

	_ = srv.Stop(syscall.SIGTERM)
	out = runBerth(t, bin, "snapshot", "restore", "--data-dir", dataDir, backup)
	if !strings.Contains(out, "previous data kept in") {
		t.Fatalf("snapshot restore: %s", out)
	}

	srv.Restart(t)
	cs2 := srv.Admin
	if _, err := cs2.CoreV1().ConfigMaps("default").Get(ctx, "before-backup", metav1.GetOptions{}); err != nil {
		t.Fatalf("object from before the backup: %v", err)
	}
	if _, err := cs2.CoreV1().ConfigMaps("default").Get(ctx, "after-backup", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("object from after the backup: got %v, want NotFound", err)
	}
	// The restored cluster takes writes and keeps its identity files.
	if _, err := cs2.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-restore"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func runBerth(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
