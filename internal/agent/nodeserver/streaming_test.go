package nodeserver

import (
	"net/http"
	"net/http/httptest"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestStreamingRefusesBadRequests: nothing reaches CRI Exec or Attach
// (the fake panics on them) when the request cannot be served.
func TestStreamingRefusesBadRequests(t *testing.T) {
	labels := map[string]string{labelPodNamespace: "ns", labelPodName: "web", labelContainerName: "app"}
	rt := &fakeRuntime{containers: []*runtimeapi.Container{
		{Id: "c1", Labels: labels, Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, State: runtimeapi.ContainerState_CONTAINER_EXITED},
	}}
	srv := httptest.NewServer(routes(Config{Runtime: rt}))
	defer srv.Close()
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/exec/ns/web/app?stdout=1", http.StatusBadRequest},                   // no command
		{"/exec/ns/web/app?command=true", http.StatusBadRequest},               // no stream
		{"/exec/ns/web/app?command=true&stdout=yes", http.StatusBadRequest},    // not a boolean
		{"/exec/ns/web/app?command=true&stdout=1", http.StatusBadRequest},      // not running
		{"/exec/ns/web/missing?command=true&stdout=true", http.StatusNotFound}, // no such container
		{"/attach/ns/web/app?stdout=true", http.StatusBadRequest},              // not running
		{"/containerLogs/ns/web", http.StatusNotFound},                         // no route
	} {
		resp, err := http.Post(srv.URL+tc.path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("POST %s: %d, want %d", tc.path, resp.StatusCode, tc.want)
		}
	}
}

func TestParseStreamsDropsStderrWithTTY(t *testing.T) {
	s, err := parseStreams(map[string][]string{"stdin": {"1"}, "stdout": {"true"}, "stderr": {"1"}, "tty": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	if s != (streams{stdin: true, stdout: true, tty: true}) {
		t.Errorf("got %+v", s)
	}
}
