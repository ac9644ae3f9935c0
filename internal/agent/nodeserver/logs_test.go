package nodeserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/testkit/testio"
)

// fakeRuntime answers the CRI calls the log endpoint makes from a fixed
// set of containers; every other call panics (nil embedded interface).
type fakeRuntime struct {
	runtimeapi.RuntimeServiceClient
	containers []*runtimeapi.Container
	logPaths   map[string]string
}

func (f *fakeRuntime) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	var out []*runtimeapi.Container
	for _, c := range f.containers {
		match := true
		for k, v := range req.GetFilter().GetLabelSelector() {
			if c.Labels[k] != v {
				match = false
			}
		}
		if match {
			out = append(out, c)
		}
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	for _, c := range f.containers {
		if c.Id == req.ContainerId {
			return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: c.Id, State: c.State, LogPath: f.logPaths[c.Id]}}, nil
		}
	}
	return nil, errNotFound{req.ContainerId}
}

func TestContainerLogsEndpoint(t *testing.T) {
	labels := map[string]string{labelPodNamespace: "ns", labelPodName: "web", labelContainerName: "app"}
	rt := &fakeRuntime{
		containers: []*runtimeapi.Container{
			{Id: "old", Labels: labels, Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 0}, State: runtimeapi.ContainerState_CONTAINER_EXITED},
			{Id: "new", Labels: labels, Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 1}, State: runtimeapi.ContainerState_CONTAINER_EXITED},
		},
		logPaths: map[string]string{
			"old": testio.WriteFile(t, "0.log", "2026-11-30T01:00:00Z stdout F first run\n"),
			"new": testio.WriteFile(t, "0.log", "2026-11-30T01:00:05Z stdout F second run\n2026-11-30T01:00:06Z stderr F crashed\n"),
		},
	}
	srv := httptest.NewServer(routes(Config{Runtime: rt}))
	defer srv.Close()
	for _, tc := range []struct {
		query    string
		wantCode int
		wantBody string
	}{
		{"/containerLogs/ns/web/app", 200, "second run\ncrashed\n"},
		{"/containerLogs/ns/web/app?previous=true", 200, "first run\n"},
		{"/containerLogs/ns/web/app?tailLines=1&timestamps=true", 200, "2026-11-30T01:00:06Z crashed\n"},
		// A stopped container's followed log ends at the end of the file.
		{"/containerLogs/ns/web/app?follow=true", 200, "second run\ncrashed\n"},
		{"/containerLogs/ns/web/other", 404, ""},
		{"/containerLogs/ns/web/app?tailLines=-1", 400, ""},
		{"/containerLogs/ns/web/app?follow=maybe", 400, ""},
		{"/containerLogs/ns/web/app?sinceSeconds=1&sinceTime=2026-11-30T01:00:00Z", 400, ""},
	} {
		resp, err := http.Get(srv.URL + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.wantCode || (tc.wantCode == 200 && string(body) != tc.wantBody) {
			t.Errorf("%s: %d %q, want %d %q", tc.query, resp.StatusCode, body, tc.wantCode, tc.wantBody)
		}
	}
}
