package apiserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// fakeNodeServer stands in for an agent's node server on loopback TLS and
// records what the API server asked it.
type fakeNodeServer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []*url.URL
}

func newFakeNodeServer(t *testing.T) *fakeNodeServer {
	f := &fakeNodeServer{}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.reqs = append(f.reqs, r.URL)
		f.mu.Unlock()
		_, _ = w.Write([]byte("log line from the node\n"))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeNodeServer) last(t *testing.T) *url.URL {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("the node server got no request")
	}
	return f.reqs[len(f.reqs)-1]
}

// serverWithNode starts a server (configure, when set, adjusts its
// configuration) whose node n1 is a fake node server, with pod "one" and
// its container "main" on n1.
func serverWithNode(t *testing.T, configure func(*Config)) (*fakeNodeServer, *testServer) {
	t.Helper()
	node := newFakeNodeServer(t)
	s := newTestServerWith(t, func(c *Config) {
		c.NodeTransport = node.srv.Client().Transport
		if configure != nil {
			configure(c)
		}
	})
	port, _ := strconv.Atoi(node.srv.URL[len("https://127.0.0.1:"):])
	registerNode(t, s, "n1", int32(port))
	createPod(t, s, "one", "n1", "main")
	return node, s
}

// registerNode creates a node whose status names the fake server's address.
func registerNode(t *testing.T, s *testServer, name string, port int32) {
	t.Helper()
	createNodes(t, s, name)
	ctx := testContext(t)
	n, err := s.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	if _, err := s.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, s *testServer, name, node string, containers ...string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "busybox"})
	}
	if _, err := s.client.CoreV1().Pods("default").Create(testContext(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestPodLogProxiesToTheNodeServer(t *testing.T) {
	t.Parallel()
	node, s := serverWithNode(t, nil)
	registerNode(t, s, "no-port", 0)
	createPod(t, s, "two", "n1", "a", "b")
	createPod(t, s, "unbound", "", "main")
	createPod(t, s, "portless", "no-port", "main")
	ctx := testContext(t)
	pods := s.client.CoreV1().Pods("default")

	tail, negative := int64(3), int64(-1)
	body, err := pods.GetLogs("one", &corev1.PodLogOptions{Follow: true, TailLines: &tail, Timestamps: true}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(body) != "log line from the node\n" {
		t.Errorf("body %q", body)
	}
	got := node.last(t)
	if got.Path != "/containerLogs/default/one/main" {
		t.Errorf("node path %q, want /containerLogs/default/one/main", got.Path)
	}
	if q := got.Query(); q.Get("follow") != "true" || q.Get("tailLines") != "3" || q.Get("timestamps") != "true" || q.Has("container") {
		t.Errorf("node query %q: want follow, tailLines and timestamps passed on, container not", got.RawQuery)
	}

	if _, err := pods.GetLogs("two", &corev1.PodLogOptions{Container: "b"}).DoRaw(ctx); err != nil {
		t.Fatal(err)
	}
	if got := node.last(t).Path; got != "/containerLogs/default/two/b" {
		t.Errorf("node path %q, want /containerLogs/default/two/b", got)
	}

	for _, tc := range []struct {
		name, pod string
		opts      corev1.PodLogOptions
		check     func(error) bool
	}{
		{"no container named in a two-container pod", "two", corev1.PodLogOptions{}, apierrors.IsBadRequest},
		{"unknown container", "one", corev1.PodLogOptions{Container: "nope"}, apierrors.IsBadRequest},
		{"unscheduled pod: no log yet", "unbound", corev1.PodLogOptions{}, func(err error) bool { return err == nil }},
		{"negative tailLines", "one", corev1.PodLogOptions{TailLines: &negative}, apierrors.IsInvalid},
		{"node without a node server", "portless", corev1.PodLogOptions{}, apierrors.IsServiceUnavailable},
		{"missing pod", "ghost", corev1.PodLogOptions{}, apierrors.IsNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pods.GetLogs(tc.pod, &tc.opts).DoRaw(ctx)
			if !tc.check(err) {
				t.Errorf("got %v", err)
			}
		})
	}
}

func TestPodExecNeedsAnUpgrade(t *testing.T) {
	t.Parallel()
	node, s := serverWithNode(t, nil)
	err := s.client.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("one").SubResource("exec").
		Param("command", "true").Param("stdout", "true").Do(testContext(t)).Error()
	if !apierrors.IsBadRequest(err) {
		t.Errorf("exec without an upgrade: %v, want 400", err)
	}
	node.mu.Lock()
	defer node.mu.Unlock()
	if len(node.reqs) != 0 {
		t.Errorf("the node server was called: %v", node.reqs)
	}
}

func TestPodConnectWithoutNodeTransport(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	registerNode(t, s, "n1", 10250)
	createPod(t, s, "one", "n1", "main")
	_, err := s.client.CoreV1().Pods("default").GetLogs("one", &corev1.PodLogOptions{}).DoRaw(testContext(t))
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("got %v, want 503", err)
	}
}

// A websocket exec is a GET; it also needs create on pods/exec.
func TestPodExecOverGetNeedsCreate(t *testing.T) {
	t.Parallel()
	getOnly := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetSubresource() == "exec" && a.GetVerb() == "create" {
			return authorizer.DecisionNoOpinion, "read-only", nil
		}
		return authorizer.DecisionAllow, "", nil
	})
	_, s := serverWithNode(t, func(c *Config) { c.Authorizer = getOnly })
	err := s.client.CoreV1().RESTClient().Get().Namespace("default").Resource("pods").Name("one").SubResource("exec").
		Param("command", "true").Param("stdout", "true").Do(testContext(t)).Error()
	if !apierrors.IsForbidden(err) {
		t.Errorf("GET pods/exec without create: %v, want 403", err)
	}
}

// denyAttach refuses CONNECT on pods/attach, as a webhook that forbids
// attaching would; it records the options it was shown.
type denyAttach struct {
	mu   sync.Mutex
	seen []runtime.Object
}

func (*denyAttach) Handles(op admission.Operation) bool { return op == admission.Connect }

func (d *denyAttach) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	d.mu.Lock()
	d.seen = append(d.seen, a.GetObject())
	d.mu.Unlock()
	if a.GetSubresource() == "attach" {
		return admission.NewForbidden(a, errors.New("attaching is not allowed"))
	}
	return nil
}

// pods/attach, exec and portforward pass through admission as CONNECT on
// their options, as upstream's connect handler does, before the node is
// called: a refusal is the answer and the node never hears of it.
func TestPodConnectRunsAdmission(t *testing.T) {
	t.Parallel()
	deny := &denyAttach{}
	node, s := serverWithNode(t, func(c *Config) { c.Admission = deny })
	err := s.client.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("one").SubResource("attach").
		Param("container", "main").Param("stdout", "true").Do(testContext(t)).Error()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "attaching is not allowed") {
		t.Fatalf("attach refused by admission: %v, want 403 with the plugin's reason", err)
	}
	node.mu.Lock()
	calls := len(node.reqs)
	node.mu.Unlock()
	if calls != 0 {
		t.Errorf("the node server was called %d times for a refused attach", calls)
	}
	deny.mu.Lock()
	defer deny.mu.Unlock()
	if len(deny.seen) != 1 {
		t.Fatalf("admission saw %d connect requests, want 1", len(deny.seen))
	}
	if opts, ok := deny.seen[0].(*corev1.PodAttachOptions); !ok || opts.Container != "main" || !opts.Stdout {
		t.Errorf("admission was shown %#v, want the request's PodAttachOptions", deny.seen[0])
	}
}

// The node is asked as kube-apiserver asks a kubelet: the options of exec,
// attach and port-forward in the kubelet's own parameter names.
func TestPodStreamsAskTheNodeInTheKubeletsTerms(t *testing.T) {
	t.Parallel()
	node, s := serverWithNode(t, nil)
	for _, tc := range []struct{ sub, want string }{
		{"exec?command=id&command=-u&stdout=true&stderr=true", "/exec/default/one/main?command=id&command=-u&error=1&output=1"},
		{"attach?stdin=true&tty=true", "/attach/default/one/main?input=1&tty=1"},
		{"portforward?ports=80&ports=8080", "/portForward/default/one?port=80%2C8080"},
	} {
		rawUpgrade(t, s.url, "/api/v1/namespaces/default/pods/one/"+tc.sub)
		if got := node.last(t).RequestURI(); got != tc.want {
			t.Errorf("%s: the node was asked for %q, want %q", tc.sub, got, tc.want)
		}
	}
}
