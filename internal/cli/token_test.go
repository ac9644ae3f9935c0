package cli

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	dataDir := t.TempDir()
	t.Cleanup(runTestServer(t, dataDir))
	return dataDir
}

// runTestServer starts a server on dataDir and returns its stop function
// once the server has written or kept its default join token.
func runTestServer(t *testing.T, dataDir string) (stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	tokenReady := make(chan struct{})
	log := slog.New(&signalHandler{Handler: slog.NewTextHandler(io.Discard, nil), msg: "join token ready", signal: tokenReady, once: new(sync.Once)})
	go func() {
		done <- server.Run(ctx, server.Config{DataDir: dataDir, BindAddress: "127.0.0.1", Port: port, DisableAgent: true, Logger: log})
	}()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	}
	select {
	case <-tokenReady:
		return stop
	case err := <-done:
		t.Fatalf("server stopped: %v", err)
	case <-time.After(3 * time.Minute):
		stop()
		t.Fatal("no DATA_DIR/token")
	}
	return nil
}

// signalHandler closes signal the first time a record with msg is logged.
type signalHandler struct {
	slog.Handler
	msg    string
	signal chan struct{}
	once   *sync.Once // shared with derived handlers: signal closes once
}

func (h *signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.signal) })
	}
	return h.Handler.Handle(ctx, r)
}

func (h *signalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &signalHandler{Handler: h.Handler.WithAttrs(attrs), msg: h.msg, signal: h.signal, once: h.once}
}

// The default join token survives a restart while it is valid; once its
// Secret is gone, the next start writes a new one.
func TestDefaultTokenReusedAcrossRestart(t *testing.T) {
	dataDir := t.TempDir()
	tokenPath := filepath.Join(dataDir, "token")
	stop := runTestServer(t, dataDir)
	first, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(tokenPath); st.Mode().Perm() != 0o600 {
		t.Errorf("DATA_DIR/token mode %v, want 0600", st.Mode().Perm())
	}
	stop()

	stop = runTestServer(t, dataDir)
	again, err := os.ReadFile(tokenPath)
	if err != nil || string(again) != string(first) {
		t.Fatalf("after a restart DATA_DIR/token = %q (%v), want the same %q", again, err, first)
	}
	j, err := bootstraptoken.ParseJoinToken(strings.TrimSpace(string(first)))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "token", "delete", "--kubeconfig", filepath.Join(dataDir, "admin.kubeconfig"), j.ID()); err != nil {
		t.Fatal(err)
	}
	stop()

	stop = runTestServer(t, dataDir)
	defer stop()
	fresh, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(fresh) == string(first) {
		t.Error("a deleted default token was kept in DATA_DIR/token")
	}
	if _, err := bootstraptoken.ParseJoinToken(strings.TrimSpace(string(fresh))); err != nil {
		t.Errorf("new DATA_DIR/token: %v", err)
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
