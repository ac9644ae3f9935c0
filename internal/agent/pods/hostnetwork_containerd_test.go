package pods

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth/berth/internal/testkit/cri"
	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/wait"
)

func freeLoopbackPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestHostNetworkPodServesOnTheNode(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	port := freeLoopbackPort(t)
	web := corev1.Container{
		Name: "web", Image: cri.Image(images.Httpd),
		Command: []string{"httpd", "-f", "-p", "127.0.0.1:" + strconv.Itoa(port), "-h", "/www"},
	}
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hostnet"},
		Spec:       corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{web}},
	})
	p := h.waitPod(pod, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if p.Status.PodIP != h.cfg.NodeIP {
		t.Errorf("podIP = %q, want the node's %q", p.Status.PodIP, h.cfg.NodeIP)
	}
	var body string
	err := wait.PollTrue(t.Context(), 30*time.Second, "the host-network httpd to answer 200", func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		body = string(data)
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil || body != images.HttpdIndex {
		t.Fatalf("host-network httpd on 127.0.0.1:%d answered %q, %v", port, body, err)
	}
}
