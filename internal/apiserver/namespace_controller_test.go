package apiserver

import (
	"context"
	"log/slog"
	"testing"

	"k8s.io/client-go/metadata"

	"github.com/berth/berth/internal/controller/namespace"
	"github.com/berth/berth/internal/informeropts"
)

// startNamespaceController runs the namespace and ServiceAccounts
// controllers the server runs, against s, until the test ends.
func startNamespaceController(t *testing.T, s *testServer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- namespace.Run(ctx, namespace.Config{Metadata: metadata.NewForConfigOrDie(s.config),
			ControllerConfig: informeropts.ControllerConfig{Client: s.jsonCli, Logger: slog.New(slog.NewTextHandler(testLogWriter{t}, nil))}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("namespace controller: %v", err)
		}
	})
}
