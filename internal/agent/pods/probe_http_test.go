package pods

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// HTTP probes and hooks are the kubelet's requests: a query in the path
// reaches the server as a query, with the probe's headers and kube-probe's
// user agent; 4xx and 5xx fail; a redirect to another host is a success
// with a warning.
func TestHTTPProbeRequestIsTheKubelets(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		switch r.URL.Path {
		case "/broken":
			w.WriteHeader(http.StatusInternalServerError)
		case "/elsewhere":
			http.Redirect(w, r, "http://0.0.0.0/", http.StatusFound)
		}
	}))
	defer srv.Close()
	host, portText, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	m := &Manager{}
	pod := &corev1.Pod{Status: corev1.PodStatus{PodIP: host}}
	c := &corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	get := &corev1.HTTPGetAction{Path: "/echo?msg=poststart", Port: intstr.FromString("http"),
		HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}}
	if _, err := m.probeHTTP(ctx, pod, c, get); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if got.URL.Path != "/echo" || got.URL.Query().Get("msg") != "poststart" || got.Header.Get("X-Probe") != "yes" ||
		!strings.HasPrefix(got.UserAgent(), "kube-probe/") {
		t.Errorf("server saw path %q query %q headers %v", got.URL.Path, got.URL.RawQuery, got.Header)
	}
	if _, err := m.probeHTTP(ctx, pod, c, &corev1.HTTPGetAction{Path: "/broken", Port: intstr.FromInt32(int32(port))}); err == nil {
		t.Error("a 500 answer passed the probe")
	}
	// A redirect to another host is not followed: a success with upstream's warning.
	warning, err := m.probeHTTP(ctx, pod, c, &corev1.HTTPGetAction{Path: "/elsewhere", Port: intstr.FromInt32(int32(port))})
	if err != nil || !strings.HasPrefix(warning, "Probe terminated redirects") {
		t.Errorf("a redirect to another host: warning %q, %v; want a success with upstream's redirect warning", warning, err)
	}
}
