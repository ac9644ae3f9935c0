package nodeserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podSource is a PodSource whose answer the test sets; it counts reads so
// the test can tell that refused callers never reached it.
type podSource struct {
	mu    sync.Mutex
	pods  []*corev1.Pod
	known bool
	reads int
}

func (p *podSource) Pods() ([]*corev1.Pod, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reads++
	return p.pods, p.known
}

func (p *podSource) set(known bool, pods ...*corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods, p.known = pods, known
}

func (p *podSource) readCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads
}

func testPod(ns, name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: image}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// TestPodsEndpoint reads /pods through the real HTTPS server: a PodList of
// the source's pods for the API server and admins, sorted; 503 before the
// pods are known; refused callers never reach the source.
func TestPodsEndpoint(t *testing.T) {
	src := &podSource{}
	s := startTLSServer(t, Config{Pods: src})
	get := func(c *http.Client) (int, []byte) {
		t.Helper()
		resp, err := c.Get(s.base + "/pods")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}

	if code, body := get(s.apiServer()); code != http.StatusServiceUnavailable {
		t.Errorf("before the first list: %d %s, want 503", code, body)
	}

	src.set(true, testPod("web", "b", "img-b"), testPod("default", "z", "img-z"), testPod("web", "a", "img-a"))
	for name, c := range map[string]*http.Client{"api server": s.apiServer(), "admin": s.admin()} {
		code, body := get(c)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", name, code, body)
		}
		var list corev1.PodList
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatalf("%s: not a PodList: %v\n%s", name, err, body)
		}
		if list.Kind != "PodList" || list.APIVersion != "v1" {
			t.Errorf("%s: kind %q apiVersion %q, want PodList v1", name, list.Kind, list.APIVersion)
		}
		var got []string
		for _, p := range list.Items {
			got = append(got, p.Namespace+"/"+p.Name+"/"+p.Spec.Containers[0].Image+"/"+string(p.Status.Phase))
		}
		want := []string{"default/z/img-z/Running", "web/a/img-a/Running", "web/b/img-b/Running"}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("%s: pods %v, want %v", name, got, want)
		}
	}

	// No pods is an empty list ("items":[]), as the API server would say.
	src.set(true)
	if code, body := get(s.admin()); code != http.StatusOK || !strings.Contains(string(body), `"items":[]`) {
		t.Errorf("no pods: %d %s, want 200 with an empty items list", code, body)
	}

	reads := src.readCount()
	for name, tc := range map[string]struct {
		c    *http.Client
		want int
	}{"node": {s.node(), http.StatusForbidden}, "anonymous": {s.anonymous(), http.StatusUnauthorized}} {
		if code, body := get(tc.c); code != tc.want {
			t.Errorf("%s: %d %s, want %d", name, code, body, tc.want)
		}
	}
	if n := src.readCount(); n != reads {
		t.Errorf("refused callers read the pods %d times", n-reads)
	}
}

// TestPodsEndpointWithoutSource: a node server built without a pod source
// says so rather than claiming the node runs nothing.
func TestPodsEndpointWithoutSource(t *testing.T) {
	s := startTLSServer(t, Config{})
	resp, err := s.admin().Get(s.base + "/pods")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404", resp.StatusCode)
	}
}
