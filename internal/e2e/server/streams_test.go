package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/ports"
)

// checkPodStreams exercises kubectl's streaming commands against pod,
// whose one container printed "hello-from-berth" and then became
// `sleep 3600` (busybox).
func checkPodStreams(t *testing.T, srv *cluster.Server, pod string) {
	t.Helper()
	if out := srv.Kubectl(t, "", "logs", pod); out != "hello-from-berth\n" {
		t.Errorf("kubectl logs %s = %q, want %q", pod, out, "hello-from-berth\n")
	}
	if out := srv.Kubectl(t, "", "logs", pod, "--timestamps", "--tail", "1"); !regexp.MustCompile(`^20\d\d-\d\d-\d\dT\S+ hello-from-berth\n$`).MatchString(out) {
		t.Errorf("kubectl logs --timestamps --tail 1 = %q, want TIMESTAMP hello-from-berth", out)
	}
	if out := srv.Kubectl(t, "", "exec", pod, "--", "echo", "ok"); out != "ok\n" {
		t.Errorf("kubectl exec %s -- echo ok = %q, want %q", pod, out, "ok\n")
	}
	// It runs inside the container: its PID 1 is the pod's sleep.
	if out := srv.Kubectl(t, "", "exec", pod, "-c", "main", "--", "cat", "/proc/1/cmdline"); out != "sleep\x003600\x00" {
		t.Errorf("kubectl exec: the container's pid 1 is %q, want the pod's sleep", out)
	}
	if out := srv.Kubectl(t, "piped through stdin\n", "exec", "-i", pod, "--", "cat"); out != "piped through stdin\n" {
		t.Errorf("kubectl exec -i %s -- cat = %q", pod, out)
	}

	// logs -f sees what the container writes after it started following.
	follow := startKubectl(t, srv, "logs", "-f", pod)
	follow.waitFor(t, "hello-from-berth")
	srv.Kubectl(t, "", "exec", pod, "--", "sh", "-c", "echo written-later > /proc/1/fd/1")
	follow.waitFor(t, "written-later")

	// attach shows the container's output stream as it happens.
	attach := startKubectl(t, srv, "attach", pod)
	attach.waitFor(t, "If you don't see a command prompt")
	srv.Kubectl(t, "", "exec", pod, "--", "sh", "-c", "echo seen-by-attach > /proc/1/fd/1")
	attach.waitFor(t, "seen-by-attach")

	// port-forward reaches a busybox httpd listening in the pod.
	srv.Kubectl(t, "", "exec", pod, "--", "sh", "-c", "mkdir -p /www && echo served-from-pod > /www/index.html && httpd -p 8080 -h /www")
	local := ports.Free(t)
	pf := startKubectl(t, srv, "port-forward", pod, fmt.Sprintf("%d:8080", local), "--address", "127.0.0.1")
	pf.waitFor(t, "Forwarding from 127.0.0.1:")
	resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + net.JoinHostPort("127.0.0.1", fmt.Sprint(local)) + "/index.html")
	if err != nil {
		t.Fatalf("GET through port-forward: %v\n%s", err, pf.output())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "served-from-pod\n" {
		t.Errorf("GET through port-forward: %d %q", resp.StatusCode, body)
	}

	// kubectl speaks WebSocket by default; the SPDY fallback works too.
	t.Setenv("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false")
	if out := srv.Kubectl(t, "over spdy\n", "exec", "-i", pod, "--", "cat"); out != "over spdy\n" {
		t.Errorf("kubectl exec -i over SPDY = %q", out)
	}
}

// checkPreviousLogs: after a restart, `kubectl logs` shows the running
// container and `--previous` the one that exited.
func checkPreviousLogs(t *testing.T, cs kubernetes.Interface, srv *cluster.Server) {
	t.Helper()
	grace := int64(1)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "restarts"}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: &grace,
		Volumes:                       []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Containers: []corev1.Container{{Name: "main", Image: images.Busybox,
			VolumeMounts: []corev1.VolumeMount{{Name: "state", MountPath: "/state"}},
			Command:      []string{"sh", "-c", "if [ -e /state/ran ]; then echo second-run; exec sleep 3600; fi; touch /state/ran; echo first-run; exit 1"}}},
	}}
	if _, err := cs.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, cs, "restarts", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	if out := srv.Kubectl(t, "", "logs", "restarts"); out != "second-run\n" {
		t.Errorf("kubectl logs restarts = %q, want the running container's %q", out, "second-run\n")
	}
	if out := srv.Kubectl(t, "", "logs", "restarts", "--previous"); out != "first-run\n" {
		t.Errorf("kubectl logs restarts --previous = %q, want the exited container's %q", out, "first-run\n")
	}
	if err := cs.CoreV1().Pods("default").Delete(context.Background(), "restarts", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// runningKubectl is a long-running `berth kubectl` (logs -f, attach,
// port-forward) whose output lines the test reads as they come.
type runningKubectl struct {
	lines chan string
	seen  []string
	done  chan struct{}
}

func startKubectl(t *testing.T, srv *cluster.Server, args ...string) *runningKubectl {
	t.Helper()
	cmd := srv.KubectlCommand(context.Background(), t, args...)
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k := &runningKubectl{lines: make(chan string, 100), done: make(chan struct{})}
	go func() {
		defer close(k.lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			k.lines <- sc.Text()
		}
	}()
	go func() { _ = cmd.Wait(); w.Close(); close(k.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-k.done
		for range k.lines { // let the reader finish
		}
	})
	return k
}

// waitFor reads lines until one contains want; a minute without it (or
// the process ending) fails the test.
func (k *runningKubectl) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-k.lines:
			if !ok {
				t.Fatalf("kubectl ended before printing %q; output:\n%s", want, k.output())
			}
			k.seen = append(k.seen, line)
			if strings.Contains(line, want) {
				return
			}
		case <-timeout:
			t.Fatalf("kubectl never printed %q; output:\n%s", want, k.output())
		}
	}
}

func (k *runningKubectl) output() string { return strings.Join(k.seen, "\n") }
