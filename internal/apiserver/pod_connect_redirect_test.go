package apiserver

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

const redirectMarker = "secret-marker-the-caller-must-never-see"

// redirectingNode is a node server (loopback TLS) that answers every
// request with a redirect to another loopback server holding a secret,
// which counts who reached it.
type redirectingNode struct {
	node    *httptest.Server
	secret  *httptest.Server
	reached atomic.Int32
}

func newRedirectingNode(t *testing.T) *redirectingNode {
	r := &redirectingNode{}
	// Plain HTTP, so that any client handed the redirect (client-go
	// follows them) could fetch it: the test fails if anyone does.
	r.secret = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.reached.Add(1)
		_, _ = io.WriteString(w, redirectMarker)
	}))
	t.Cleanup(r.secret.Close)
	r.node = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, r.secret.URL+"/stolen", http.StatusFound)
	}))
	t.Cleanup(r.node.Close)
	return r
}

func (r *redirectingNode) port(t *testing.T) int32 {
	_, port, err := net.SplitHostPort(r.node.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return int32(p)
}

func (r *redirectingNode) checkNotReached(t *testing.T, what string, got string) {
	t.Helper()
	if strings.Contains(got, redirectMarker) {
		t.Errorf("%s: the redirect target's content reached the client: %q", what, got)
	}
	if n := r.reached.Load(); n != 0 {
		t.Errorf("%s: the redirect target was reached %d times", what, n)
	}
}

// A node server that redirects pods/log gets the caller an error, never the
// redirect target's content, whether the log is followed or not.
func TestPodLogRefusesANodeRedirect(t *testing.T) {
	t.Parallel()
	r := newRedirectingNode(t)
	s := newTestServerWith(t, func(c *Config) { c.NodeTransport = r.node.Client().Transport })
	registerNode(t, s, "n1", r.port(t))
	createPod(t, s, "one", "n1", "main")
	for _, follow := range []bool{false, true} {
		name := "follow=" + strconv.FormatBool(follow)
		res := s.client.CoreV1().Pods("default").GetLogs("one", &corev1.PodLogOptions{Follow: follow}).Do(testContext(t))
		body, _ := res.Raw()
		err := res.Error()
		got := string(body)
		if err != nil {
			got += err.Error()
		}
		if !apierrors.IsServiceUnavailable(err) || !strings.Contains(got, "answered pods/log with a redirect, which the API server does not follow") {
			t.Errorf("%s: err = %v, want 503 saying the API server does not follow the node's redirect", name, err)
		}
		if strings.Contains(got, r.secret.URL) {
			t.Errorf("%s: the refusal names the redirect's target: %v", name, err)
		}
		r.checkNotReached(t, name, got)
	}
}

// exec, attach and portforward are upgrades the API server dials itself: a
// redirect in place of the upgrade is an error too.
func TestPodExecRefusesANodeRedirect(t *testing.T) {
	t.Parallel()
	r := newRedirectingNode(t)
	s := newTestServerWith(t, func(c *Config) { c.NodeTransport = r.node.Client().Transport })
	registerNode(t, s, "n1", r.port(t))
	createPod(t, s, "one", "n1", "main")
	for _, sub := range []string{"exec?command=id&stdout=true", "attach?stdout=true", "portforward?ports=80"} {
		got := rawUpgrade(t, s.url, "/api/v1/namespaces/default/pods/one/"+sub)
		if !strings.HasPrefix(got, "HTTP/1.1 503") || !strings.Contains(got, "invalid upgrade response: status code 302") {
			t.Errorf("%s: answer %q, want 503 for the node's invalid upgrade response", sub, got)
		}
		r.checkNotReached(t, sub, got)
	}
}

// rawUpgrade sends an SPDY upgrade request, as kubectl exec does, and
// returns the whole answer.
func rawUpgrade(t *testing.T, serverURL, path string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(serverURL, "http://"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	req := "POST " + path + " HTTP/1.1\r\nHost: api\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer to %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Proto + " " + resp.Status + "\n" + resp.Header.Get("Location") + "\n" + string(body)
}
