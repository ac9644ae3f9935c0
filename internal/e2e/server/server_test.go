package server

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/testkit/cluster"
)

// Everything the server acknowledged survives a kill -9, and the server
// starts again on the same data directory with the same identity files.
func TestServerDurabilityAcrossKill9(t *testing.T) {
	srv := cluster.Start(t, berthBin, cluster.Options{})
	cs := srv.Admin

	kubeconfigBefore, err := os.ReadFile(srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(srv.Kubeconfig); st.Mode().Perm() != 0o600 {
		t.Errorf("admin.kubeconfig mode %v, want 0600", st.Mode().Perm())
	}

	const n = 40
	acked := map[string]string{}
	ctx := context.Background()
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"i": strconv.Itoa(i)}}
		created, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", cm.Name, err)
		}
		acked[created.Name] = created.Data["i"]
	}
	_ = srv.Stop(syscall.SIGKILL)

	srv.Restart(t)
	cs2 := srv.Admin
	for name, want := range acked {
		got, err := cs2.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("acknowledged %s lost: %v", name, err)
			continue
		}
		if got.Data["i"] != want {
			t.Errorf("%s: data %v, want i=%s", name, got.Data, want)
		}
	}
	kubeconfigAfter, _ := os.ReadFile(srv.Kubeconfig)
	if string(kubeconfigAfter) != string(kubeconfigBefore) {
		t.Error("admin.kubeconfig was rewritten on restart; clients holding it would break")
	}

	// SIGTERM is a clean shutdown: exit status 0, within a minute.
	if err := srv.Stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, srv.Log())
	}
	assertShutdownOrder(t, srv.Log(), "shutdown: control loops stopped", "shutdown: API server stopped", "shutdown: store closed")
}

// assertShutdownOrder checks that the server logged each step, in order.
func assertShutdownOrder(t *testing.T, log string, steps ...string) {
	t.Helper()
	// Anchored on the server's own structured line: upstream's controllers
	// also log "shutting down" while they stop, after it.
	at := strings.LastIndex(log, `msg="shutting down"`)
	if at < 0 {
		t.Fatalf("no shutdown in the log:\n%s", log)
	}
	for _, step := range steps {
		i := strings.Index(log[at:], step)
		if i < 0 {
			t.Fatalf("shutdown step %q missing or out of order (steps %q)\n%s", step, steps, log[at:])
		}
		at += i
	}
}
