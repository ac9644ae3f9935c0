package apiserver

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/testkit/etcdtest"
)

// testServer is a berth API server over a real embedded etcd, served on a
// loopback httptest listener, with clients that talk to it.
type testServer struct {
	store   store.Interface
	url     string
	config  *rest.Config
	client  kubernetes.Interface // protobuf, client-go's default for core types
	jsonCli kubernetes.Interface
	dynamic dynamic.Interface
	// local serves the server's own loops' informers (Config.LocalReads).
	local *LocalReads
}

// adminAuthenticator authenticates every request as a cluster admin.
var adminAuthenticator = authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
	return &authenticator.Response{User: &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}}, true, nil
})

func newTestServer(t testing.TB) *testServer {
	t.Helper()
	return newTestServerWith(t, func(*Config) {})
}

func newTestServerWith(t testing.TB, configure func(*Config)) *testServer {
	t.Helper()
	st := etcdtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := Config{
		Store:         st,
		Authenticator: adminAuthenticator,
		Authorizer:    authorizerfactory.NewAlwaysAllowAuthorizer(),
		Logger:        slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Metrics:       prometheus.NewRegistry(),
		LocalReads:    NewLocalReads(),
	}
	configure(&cfg)
	handler, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	t.Cleanup(cancel) // runs first: stop watches before the listener closes

	protoCfg := &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"}, Timeout: 30 * time.Second, QPS: 1000, Burst: 2000}
	jsonCfg := &rest.Config{Host: srv.URL, Timeout: 30 * time.Second, QPS: 1000, Burst: 2000}
	return &testServer{
		store:   st,
		url:     srv.URL,
		config:  jsonCfg,
		client:  kubernetes.NewForConfigOrDie(protoCfg),
		jsonCli: kubernetes.NewForConfigOrDie(jsonCfg),
		dynamic: dynamic.NewForConfigOrDie(jsonCfg),
		local:   cfg.LocalReads,
	}
}

type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
