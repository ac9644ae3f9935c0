// Package inprocess connects berth server's own API clients — the scheduler,
// the controllers, the node authorizer's graph — to its API handler through
// socket pairs made inside the process instead of HTTPS on loopback. They
// still speak the API through client-go, each as its own user, through
// authentication, authorization, admission and audit like any client; only
// TLS and the TCP socket are gone. Every pod event went out encrypted to four
// in-process watchers, which decrypted it again: in bench/api's profile TLS
// fell from 8.9% to 5.1% of the server's CPU and socket calls from 9.3% to
// 6.1% with this, and the scheduler's binds no longer queue behind its
// watches on one HTTP/2 connection.
//
// Each identity gets a random bearer token that lives only in this process
// and that the authenticator accepts only on requests that arrived through
// this package's listener, so it is worthless anywhere else.
package inprocess

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
)

// host names the server in in-process clients' URLs. It never resolves
// (.invalid, RFC 2606); connections come from Dial, not DNS.
const host = "berth-server.in-process.invalid"

// Loopback is the in-process listener, its server and the identities of the
// clients that use it. The zero value is not usable; use New.
type Loopback struct {
	listener  *listener
	server    *http.Server
	transport *http.Transport

	mu     sync.Mutex
	users  map[string]user.Info // by token
	tokens map[string]string    // by user name
}

// New returns a Loopback whose server serves once Serve is called. Clients
// may be made before that: their requests wait for it.
func New(log *slog.Logger) *Loopback {
	l := &Loopback{
		listener: newListener(),
		users:    map[string]user.Info{},
		tokens:   map[string]string{},
	}
	l.server = &http.Server{
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.Background(), inProcessRequest{}, true)
		},
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	l.transport = newTransport(l.listener)
	return l
}

// newTransport is the one HTTP/1.1 transport every in-process client shares
// (tokens travel per request, so a connection serves any user). client-go's
// own keeps 25 idle connections per transport: the scheduler's 128 binds in
// flight then closed and re-dialled connections all the time, each a new
// socket pair, server goroutine and buffers. HTTP/1.1 rather than HTTP/2:
// one goroutine per connection serves its requests in turn, where HTTP/2
// starts a goroutine, and grows its stack, per request. Responses are never
// compressed: gzip only costs CPU where no network is crossed. No Proxy:
// never through an HTTP proxy from the environment.
func newTransport(ln *listener) *http.Transport {
	return &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return ln.dial(ctx) },
		MaxIdleConnsPerHost: maxIdleConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// maxIdleConns bounds the connections kept open for reuse: more than the
// server's own clients ever have in flight at once (the scheduler binds 128
// pods at a time; watches hold their connections while open).
const maxIdleConns = 512

// inProcessRequest marks the context of every request that came through the
// in-process listener.
type inProcessRequest struct{}

// Serve serves handler until Shutdown; it returns nil once shut down.
func (l *Loopback) Serve(handler http.Handler) error {
	l.server.Handler = handler
	if err := l.server.Serve(l.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("in-process API server: %w", err)
	}
	return nil
}

// RegisterOnShutdown adds f to what Shutdown calls as it starts.
func (l *Loopback) RegisterOnShutdown(f func()) { l.server.RegisterOnShutdown(f) }

// Shutdown stops accepting connections and waits, as far as ctx allows, for
// requests in flight; in-process clients' requests fail from then on.
func (l *Loopback) Shutdown(ctx context.Context) error {
	defer l.transport.CloseIdleConnections()
	return l.server.Shutdown(ctx)
}

// Close closes the listener and every connection at once.
func (l *Loopback) Close() error {
	defer l.transport.CloseIdleConnections()
	return l.server.Close()
}

// Config is a client configuration that reaches the server in-process as u.
func (l *Loopback) Config(u user.Info) (*rest.Config, error) {
	token, err := l.token(u)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:        "http://" + host,
		BearerToken: token,
		Transport:   l.transport,
	}, nil
}

// token is u's bearer token, made on first use.
func (l *Loopback) token(u user.Info) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.tokens[u.GetName()]; ok {
		return t, nil
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", fmt.Errorf("in-process token for %s: %w", u.GetName(), err)
	}
	t := base64.RawURLEncoding.EncodeToString(secret)
	l.tokens[u.GetName()] = t
	l.users[t] = u
	return t, nil
}

// AuthenticateToken implements authenticator.Token: an in-process client's
// token names its user, on requests that came through the in-process
// listener only.
func (l *Loopback) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if through, _ := ctx.Value(inProcessRequest{}).(bool); !through {
		return nil, false, nil
	}
	l.mu.Lock()
	u, ok := l.users[token]
	l.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	return &authenticator.Response{User: u}, true, nil
}
