package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/internal/testkit/ports"
)

// serverProcess is a `berth server` child process on a loopback port.
type serverProcess struct {
	cmd     *exec.Cmd
	dataDir string
	port    int
	exited  chan struct{} // closed once the process has been waited for
	exitErr error         // valid after exited is closed
}

// startServer runs a control-plane-only server (no local agent or runtime).
func startServer(t *testing.T, bin, dataDir string, port int) *serverProcess {
	t.Helper()
	return startServerArgs(t, bin, dataDir, port, "--disable-agent")
}

func startServerArgs(t *testing.T, bin, dataDir string, port int, extra ...string) *serverProcess {
	t.Helper()
	args := append([]string{"server", "--data-dir", dataDir, "--bind-address", "127.0.0.1", "--port", strconv.Itoa(port)}, extra...)
	cmd := exec.Command(bin, args...)
	logFile, err := os.OpenFile(filepath.Join(dataDir+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serverProcess{cmd: cmd, dataDir: dataDir, port: port, exited: make(chan struct{})}
	go func() { p.exitErr = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.exited })
	return p
}

// client waits until the server answers with its admin kubeconfig.
func (p *serverProcess) client(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	var cs *kubernetes.Clientset
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, fmt.Errorf("server exited: %v", p.exitErr)
		default:
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(p.dataDir, "admin.kubeconfig"))
		if err != nil {
			return false, nil
		}
		cs, err = kubernetes.NewForConfig(cfg)
		if err != nil {
			return false, err
		}
		_, err = cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("server never became ready: %v\n%s", err, readLog(p.dataDir))
	}
	return cs
}

func readLog(dataDir string) string {
	b, _ := os.ReadFile(dataDir + ".log")
	return string(b)
}

// Everything the server acknowledged survives a kill -9, and the server
// starts again on the same data directory with the same identity files.
func TestServerDurabilityAcrossKill9(t *testing.T) {
	bin := buildBerth(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	port := ports.Free(t)
	srv := startServer(t, bin, dataDir, port)
	cs := srv.client(t)

	kubeconfigBefore, err := os.ReadFile(filepath.Join(dataDir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(dataDir, "admin.kubeconfig")); st.Mode().Perm() != 0o600 {
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
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.exited

	srv2 := startServer(t, bin, dataDir, port)
	cs2 := srv2.client(t)
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
	kubeconfigAfter, _ := os.ReadFile(filepath.Join(dataDir, "admin.kubeconfig"))
	if string(kubeconfigAfter) != string(kubeconfigBefore) {
		t.Error("admin.kubeconfig was rewritten on restart; clients holding it would break")
	}

	// SIGTERM is a clean shutdown: exit status 0.
	if err := srv2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv2.exited:
		if srv2.exitErr != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", srv2.exitErr, readLog(dataDir))
		}
		assertShutdownOrder(t, readLog(dataDir), "shutdown: control loops stopped", "shutdown: API server stopped", "shutdown: store closed")
	case <-time.After(time.Minute):
		t.Fatal("server did not stop within a minute of SIGTERM")
	}
}

func TestServerStartupErrorsAreOneLine(t *testing.T) {
	bin := buildBerth(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	badAdmissionConfig := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(badAdmissionConfig, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n    defaults: {enforce: strictest}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"port in use":          {"--data-dir", t.TempDir(), "--bind-address", "127.0.0.1", "--port", strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)},
		"data dir is file":     {"--data-dir", notADir, "--bind-address", "127.0.0.1", "--port", strconv.Itoa(ports.Free(t))},
		"bad bind address":     {"--bind-address", "not-an-ip"},
		"port out of range":    {"--port", "70000"},
		"no token file":        {"--token-auth-file", filepath.Join(t.TempDir(), "missing.csv")},
		"negative event ttl":   {"--data-dir", t.TempDir(), "--event-ttl", "-1h"},
		"bad admission config": {"--data-dir", t.TempDir(), "--admission-control-config-file", badAdmissionConfig},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"server", "--disable-agent"}, args...)...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("want a non-zero exit, got %v\n%s", err, out)
			}
			last := strings.TrimSpace(string(out))
			if lines := strings.Split(last, "\n"); !strings.HasPrefix(lines[len(lines)-1], "berth: ") {
				t.Errorf("no one-line error:\n%s", out)
			}
		})
	}
}
