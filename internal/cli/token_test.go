package cli

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth/berth/internal/auth/bootstraptoken"
	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/server"
)

// startTestServer runs a real berth server (no local node) in-process and
// returns its data directory once its default join token is written.
func startTestServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dataDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, server.Config{DataDir: dataDir, BindAddress: "127.0.0.1", Port: port, DisableAgent: true,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.After(3 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dataDir, "token")); err == nil {
			return dataDir
		}
		select {
		case err := <-done:
			t.Fatalf("server stopped: %v", err)
		case <-deadline:
			t.Fatal("no DATA_DIR/token")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestTokenCreateListDelete(t *testing.T) {
	dataDir := startTestServer(t)
	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	serverCA, err := pki.LoadOrCreateCA(filepath.Join(dataDir, "pki"), "server-ca")
	if err != nil {
		t.Fatal(err)
	}
	defaultToken, err := os.ReadFile(filepath.Join(dataDir, "token"))
	if err != nil {
		t.Fatal(err)
	}

	out, _, err := run(t, "token", "create", "--kubeconfig", kubeconfig, "--ttl", "2h", "--description", "for node-a")
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	created, err := bootstraptoken.ParseJoinToken(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("token create printed %q: %v", out, err)
	}
	if created.CAHash != pki.PublicKeyHash(serverCA.Cert) {
		t.Errorf("printed CA hash %s, the server CA's is %s", created.CAHash, pki.PublicKeyHash(serverCA.Cert))
	}

	out, _, err = run(t, "token", "list", "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("token list: %v", err)
	}
	line := lineWith(out, created.String())
	if !strings.Contains(line, "for node-a") || !strings.Contains(line, "1h59m") && !strings.Contains(line, "2h0m0s") {
		t.Errorf("list line for the new token = %q\n%s", line, out)
	}
	if lineWith(out, strings.TrimSpace(string(defaultToken))) == "" {
		t.Errorf("list lacks the default token from DATA_DIR/token:\n%s", out)
	}

	out, _, err = run(t, "token", "delete", "--kubeconfig", kubeconfig, created.ID())
	if err != nil || !strings.Contains(out, "token "+created.ID()+" deleted") {
		t.Fatalf("token delete = %q, %v", out, err)
	}
	out, _, err = run(t, "token", "list", "--kubeconfig", kubeconfig)
	if err != nil || lineWith(out, created.ID()) != "" {
		t.Errorf("deleted token still listed (%v):\n%s", err, out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"token", "create", "--kubeconfig", kubeconfig, "--ttl", "-1h"}, "must not be negative"},
		{[]string{"token", "create", "--kubeconfig", kubeconfig, "--ttl", "soon"}, "invalid argument"},
		{[]string{"token", "delete", "--kubeconfig", kubeconfig, "NOT-AN-ID"}, "want 6 characters"},
		{[]string{"token", "delete", "--kubeconfig", kubeconfig, created.ID()}, "not found"},
		{[]string{"token", "delete", "--kubeconfig", kubeconfig}, "accepts 1 arg"},
		{[]string{"token", "list", "--kubeconfig", filepath.Join(dataDir, "missing.kubeconfig")}, "missing.kubeconfig"},
	} {
		_, _, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line containing %q", tc.args[1:3], err, tc.want)
		}
	}
	out, _, _ = run(t, "token", "list", "--kubeconfig", kubeconfig)
	if n := strings.Count(out, "berth::"); n != 1 {
		t.Errorf("bad input changed the tokens: %d listed, want the default one only\n%s", n, out)
	}
}

func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
