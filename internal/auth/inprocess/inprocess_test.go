package inprocess

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
)

// whoami answers with the user the bearer token names, or 401.
func whoami(l *Loopback) http.Handler {
	authn := bearertoken.New(l)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := authn.AuthenticateRequest(r)
		if err != nil || !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, resp.User.GetName()+" "+strings.Join(resp.User.GetGroups(), ","))
	})
}

func startLoopback(t *testing.T) *Loopback {
	t.Helper()
	l := New(slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() { done <- l.Serve(whoami(l)) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := l.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return l
}

func get(t *testing.T, cfg *rest.Config) (int, string) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/whoami", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET in-process: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestClientsReachTheServerAsTheirOwnUser(t *testing.T) {
	l := startLoopback(t)
	for _, u := range []*user.DefaultInfo{
		{Name: "system:kube-scheduler"},
		{Name: "system:apiserver", Groups: []string{"system:masters"}},
	} {
		cfg, err := l.Config(u)
		if err != nil {
			t.Fatal(err)
		}
		code, body := get(t, cfg)
		if want := u.Name + " " + strings.Join(u.Groups, ","); code != http.StatusOK || body != want {
			t.Errorf("as %s: got %d %q, want 200 %q", u.Name, code, body, want)
		}
	}
	a, _ := l.Config(&user.DefaultInfo{Name: "x"})
	b, _ := l.Config(&user.DefaultInfo{Name: "x"})
	c, _ := l.Config(&user.DefaultInfo{Name: "y"})
	if a.BearerToken != b.BearerToken || a.BearerToken == c.BearerToken || len(a.BearerToken) < 40 {
		t.Errorf("tokens: one per user, unguessable; got %q %q %q", a.BearerToken, b.BearerToken, c.BearerToken)
	}
}

func TestTokensAreRefusedOutsideTheProcess(t *testing.T) {
	l := startLoopback(t)
	cfg, err := l.Config(&user.DefaultInfo{Name: "system:kube-scheduler"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := l.AuthenticateToken(context.Background(), cfg.BearerToken); ok {
		t.Error("a request that did not come through the in-process listener was authenticated by an in-process token")
	}
	// The same handler on a network listener: the token names nobody there.
	srv := httptest.NewServer(whoami(l))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("in-process token over the network: %d, want 401", resp.StatusCode)
	}
	// In-process, a token it never issued is refused.
	bad := rest.CopyConfig(cfg)
	bad.BearerToken = "not-a-token"
	if code, _ := get(t, bad); code != http.StatusUnauthorized {
		t.Errorf("unknown token in-process: %d, want 401", code)
	}
}

func TestNoConnectionsAfterShutdown(t *testing.T) {
	l := New(slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	go func() { done <- l.Serve(whoami(l)) }()
	cfg, err := l.Config(&user.DefaultInfo{Name: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, cfg); code != http.StatusOK {
		t.Fatalf("before shutdown: %d", code)
	}
	if err := l.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve after Shutdown: %v, want nil", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l.listener.dial(ctx); !errors.Is(err, net.ErrClosed) {
		t.Errorf("dial after shutdown: %v, want net.ErrClosed", err)
	}
}

func TestDialWaitsForServeOrItsContext(t *testing.T) {
	l := New(slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.listener.dial(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("dial before Serve with an expiring context: %v, want DeadlineExceeded", err)
	}
}

// TestClientsOfEveryUserShareOnePoolOfConnections holds 100 requests in
// flight at once, then again, from clients of two users: the later burst
// finds the first's connections idle and reuses them.
func TestClientsOfEveryUserShareOnePoolOfConnections(t *testing.T) {
	const inFlight = 100
	l := New(slog.New(slog.DiscardHandler))
	var newConns atomic.Int64
	l.server.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			newConns.Add(1)
		}
	}
	arrived := make(chan struct{})
	var release atomic.Pointer[chan struct{}]
	done := make(chan error, 1)
	go func() {
		done <- l.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gate := *release.Load()
			arrived <- struct{}{}
			<-gate
		}))
	}()
	t.Cleanup(func() {
		if err := l.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		<-done
	})
	var clients []*http.Client
	for _, name := range []string{"system:kube-scheduler", "system:kube-controller-manager"} {
		cfg, err := l.Config(&user.DefaultInfo{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	burst := func() {
		gate := make(chan struct{})
		release.Store(&gate)
		errs := make(chan error, inFlight)
		for i := range inFlight {
			go func() {
				resp, err := clients[i%len(clients)].Get("http://" + host + "/")
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				errs <- err
			}()
		}
		for range inFlight {
			<-arrived
		}
		close(gate)
		for range inFlight {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	burst()
	if n := newConns.Load(); n != inFlight {
		t.Fatalf("first burst opened %d connections, want %d", n, inFlight)
	}
	// A connection goes back to the pool just after its response has been
	// read, so on a loaded machine some requests of the next burst may come
	// too early for theirs: up to three tries. With client-go's transports
	// (25 idle connections each) every burst opens at least 50 new ones.
	for try := 1; ; try++ {
		before := newConns.Load()
		burst()
		opened := newConns.Load() - before
		if opened <= inFlight/10 {
			break
		}
		if try == 3 {
			t.Fatalf("burst %d opened %d new connections, want the first burst's reused", try+1, opened)
		}
	}
}
