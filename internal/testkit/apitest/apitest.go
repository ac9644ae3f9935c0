// Package apitest gives tests a real berth API server: internal/apiserver
// over an embedded etcd (etcdtest), served on a loopback listener, where
// every request is a cluster admin's. Nothing else runs: no scheduler, no
// controllers, no agent.
package apitest

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/testkit/etcdtest"
)

// Start runs the server until the test ends and returns a protobuf client
// configuration for it. The server's warnings go to the test log.
func Start(t testing.TB) *rest.Config {
	t.Helper()
	st := etcdtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	admin := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}}, true, nil
	})
	handler, err := apiserver.New(ctx, apiserver.Config{
		Store: st, Authenticator: admin, Authorizer: authorizerfactory.NewAlwaysAllowAuthorizer(), Logger: Logger(t),
	})
	if err != nil {
		cancel()
		t.Fatalf("apitest: apiserver.New: %v", err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	t.Cleanup(cancel) // runs first: stop watches before the listener closes
	return &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"},
		Timeout: time.Minute, QPS: 5000, Burst: 10000}
}

// Logger logs warnings and worse to the test log.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
