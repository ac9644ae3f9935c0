package server

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/ports"
	"github.com/berth/berth/internal/testkit/wait"
)

// acceptanceManifest is the node agent's acceptance workload, applied with
// `berth kubectl apply`: "app" has an init container, two containers, env
// from a ConfigMap, a Secret volume, an emptyDir the two share and a
// readiness probe; "crasher" exits at once; "unhealthy" fails its liveness
// probe; "noimage" names an image no registry has. Containers trap SIGTERM
// so that a stop within the grace period shows as a clean exit.
var acceptanceManifest = strings.NewReplacer("BUSYBOX", images.Busybox).Replace(`
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {GREETING: hello-from-configmap}
---
apiVersion: v1
kind: Secret
metadata: {name: app-secret}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  terminationGracePeriodSeconds: 20
  volumes:
  - {name: shared, emptyDir: {}}
  - {name: secret, secret: {secretName: app-secret}}
  initContainers:
  - name: init
    image: BUSYBOX
    command: [sh, -c, "echo initialized > /shared/init.txt"]
    volumeMounts: [{name: shared, mountPath: /shared}]
  containers:
  - name: web
    image: BUSYBOX
    command: [sh, -c, "trap 'exit 0' TERM; httpd -p 8080 -h /shared; while sleep 1; do :; done"]
    volumeMounts: [{name: shared, mountPath: /shared}]
    readinessProbe:
      httpGet: {path: /index.html, port: 8080}
      periodSeconds: 1
  - name: writer
    image: BUSYBOX
    envFrom: [{configMapRef: {name: app-config}}]
    command: [sh, -c, "trap 'exit 0' TERM; echo \"$GREETING $(cat /shared/init.txt) $(cat /etc/secret/password)\" | tee /shared/index.html; while sleep 1; do :; done"]
    volumeMounts:
    - {name: shared, mountPath: /shared}
    - {name: secret, mountPath: /etc/secret, readOnly: true}
---
apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  containers:
  - {name: main, image: BUSYBOX, command: [sh, -c, "echo crashing; exit 3"]}
---
apiVersion: v1
kind: Pod
metadata: {name: unhealthy}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: BUSYBOX
    command: [sleep, "3600"]
    livenessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
      failureThreshold: 1
---
apiVersion: v1
kind: Pod
metadata: {name: noimage}
spec:
  containers:
  - {name: main, image: berth-test/does-not-exist:latest}
`)

// checkAcceptanceWorkload runs the acceptance workload through berth
// kubectl with default flags and checks what each pod must show.
func checkAcceptanceWorkload(t *testing.T, cs kubernetes.Interface, srv *cluster.Server) {
	t.Helper()
	// ErrImagePull comes and goes between pulls: watch for it from the start.
	noimageReasons := watchWaitingReasons(t, cs, "noimage")
	srv.Kubectl(t, acceptanceManifest, "apply", "-f", "-")
	err := wait.Poll(t.Context(), 2*time.Minute, "pod app to be Ready", func(ctx context.Context) error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !podReady(p) {
			return fmt.Errorf("status %+v", p.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s\n%s\n%s\n%s", err, srv.Kubectl(t, "", "describe", "pod", "app"),
			kubectlDiag(t, srv, "exec", "app", "-c", "web", "--", "ls", "-la", "/shared"),
			kubectlDiag(t, srv, "exec", "app", "-c", "web", "--", "ps"),
			kubectlDiag(t, srv, "exec", "app", "-c", "web", "--", "wget", "-S", "-O-", "http://127.0.0.1:8080/index.html"))
	}
	srv.Kubectl(t, "", "wait", "--for=condition=Ready", "pod/app", "--timeout=30s")
	const want = "hello-from-configmap initialized s3cret\n"
	if out := srv.Kubectl(t, "", "logs", "app", "-c", "writer"); out != want {
		t.Errorf("kubectl logs app -c writer = %q, want %q", out, want)
	}
	if out := srv.Kubectl(t, "", "exec", "app", "-c", "web", "--", "cat", "/shared/index.html"); out != want {
		t.Errorf("kubectl exec app -c web: the shared emptyDir holds %q, want %q", out, want)
	}
	checkPortForward(t, srv, "app", "/index.html", want)

	// The back-off doubles as the restarts go on (10 s, 20 s, 40 s, ...):
	// two of them seen, one twice the other. Which two depends on how long
	// the checks above took: the first back-off lasts only 10 s.
	delays := map[time.Duration]bool{}
	waitForPod(t, cs, "crasher", func(p *corev1.Pod) bool {
		s := onlyStatus(p)
		if s == nil || s.State.Waiting == nil || s.State.Waiting.Reason != "CrashLoopBackOff" {
			return false
		}
		// "back-off 10s restarting failed container=..."
		if fields := strings.Fields(s.State.Waiting.Message); len(fields) > 1 {
			if d, err := time.ParseDuration(fields[1]); err == nil {
				delays[d] = true
			}
		}
		return s.RestartCount >= 2 && backOffDoubled(delays) &&
			s.LastTerminationState.Terminated != nil && s.LastTerminationState.Terminated.ExitCode == 3
	})
	checkBackOffEvent(t, cs, "crasher")
	waitForPod(t, cs, "unhealthy", func(p *corev1.Pod) bool {
		s := onlyStatus(p)
		return s != nil && s.RestartCount >= 1
	})
	waitForPod(t, cs, "noimage", func(*corev1.Pod) bool {
		seen := noimageReasons()
		return seen["ErrImagePull"] && seen["ImagePullBackOff"]
	})

	checkGracefulDelete(t, cs, srv, "app")
	srv.Kubectl(t, "", "delete", "pod", "crasher", "unhealthy", "noimage", "--grace-period=1")
}

// watchWaitingReasons records every waiting reason pod's containers show
// from now until the test ends; the returned function reads them.
func watchWaitingReasons(t *testing.T, cs kubernetes.Interface, pod string) func() map[string]bool {
	t.Helper()
	w, err := cs.CoreV1().Pods("default").Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + pod})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	seen := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			for _, s := range p.Status.ContainerStatuses {
				if s.State.Waiting != nil {
					seen[s.State.Waiting.Reason] = true
				}
			}
			mu.Unlock()
		}
	}()
	return func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	}
}

// kubectlDiag runs berth kubectl for a failure report: output and outcome, never fatal.
func kubectlDiag(t *testing.T, srv *cluster.Server, args ...string) string {
	out, ok := srv.KubectlOutput(t, "", args...)
	return fmt.Sprintf("$ kubectl %s (ok=%v)\n%s", strings.Join(args, " "), ok, out)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func onlyStatus(p *corev1.Pod) *corev1.ContainerStatus {
	if len(p.Status.ContainerStatuses) != 1 {
		return nil
	}
	return &p.Status.ContainerStatuses[0]
}

// checkBackOffEvent finds the agent's BackOff event for pod.
func checkBackOffEvent(t *testing.T, cs kubernetes.Interface, pod string) {
	t.Helper()
	events, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + pod + ",reason=BackOff"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 {
		t.Errorf("no BackOff event for %s", pod)
	}
}

// checkPortForward fetches path from port 8080 of pod through kubectl port-forward.
func checkPortForward(t *testing.T, srv *cluster.Server, pod, path, want string) {
	t.Helper()
	local := ports.Free(t)
	pf := startKubectl(t, srv, "port-forward", pod, fmt.Sprintf("%d:8080", local), "--address", "127.0.0.1")
	pf.waitFor(t, "Forwarding from 127.0.0.1:")
	resp, err := (&http.Client{Timeout: time.Minute}).Get("http://" + net.JoinHostPort("127.0.0.1", fmt.Sprint(local)) + path)
	if err != nil {
		t.Fatalf("GET %s through port-forward: %v\n%s", path, err, pf.output())
	}
	defer resp.Body.Close()
	if body, _ := io.ReadAll(resp.Body); string(body) != want {
		t.Errorf("GET %s through port-forward: %d %q, want %q", path, resp.StatusCode, body, want)
	}
}

// checkGracefulDelete deletes pod with `kubectl delete` (which waits until
// it is gone) while watching it: the last status the agent reports before
// the pod disappears must show every container stopped by SIGTERM within
// the grace period (they trap it and exit 0), not killed (137).
func checkGracefulDelete(t *testing.T, cs kubernetes.Interface, srv *cluster.Server, pod string) {
	t.Helper()
	w, err := cs.CoreV1().Pods("default").Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + pod})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	srv.Kubectl(t, "", "delete", "pod", pod)
	var last *corev1.Pod
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok {
			last = p
		}
		if ev.Type == watch.Deleted {
			break
		}
	}
	if last == nil || len(last.Status.ContainerStatuses) != 2 {
		t.Fatalf("no final status with both containers before %s went: %+v", pod, last)
	}
	for _, s := range last.Status.ContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			t.Errorf("container %s of deleted pod %s: %+v, want terminated with exit code 0 (stopped by SIGTERM)", s.Name, pod, s.State)
		}
	}
}

// backOffDoubled reports whether the back-offs seen include one twice
// another.
func backOffDoubled(seen map[time.Duration]bool) bool {
	for d := range seen {
		if seen[2*d] {
			return true
		}
	}
	return false
}
