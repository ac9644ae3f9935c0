// Package server is the node agent's HTTPS server (the kubelet's port
// 10250): health, the node's pods, Prometheus metrics, container logs, and
// exec, attach and port-forward through the CRI runtime's streaming server. Only the API server's client
// certificate (and other system:masters) may call it.
package nodeserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Config is what the node server needs.
type Config struct {
	Runtime runtimeapi.RuntimeServiceClient
	// Pods serves /pods; nil answers 404.
	Pods PodSource
	// Metrics is the registry /metrics exposes (the agent's own, never the
	// global one); nil answers 404.
	Metrics prometheus.Gatherer
	Logger  *slog.Logger
	// LogPollInterval is how often a followed log is checked for growth.
	LogPollInterval time.Duration
}

// Handler returns the node server's routes, behind client-certificate
// authorization (see authorize).
func Handler(cfg Config) http.Handler {
	return authorize(routes(cfg))
}

// routes are the node server's endpoints, unauthenticated.
func routes(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &handlers{cfg: cfg, containers: containerFinder{rt: cfg.Runtime}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("GET /pods", s.pods)
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{ErrorLog: slogPrinter{cfg.Logger}}))
	}
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", s.containerLogs)
	for _, m := range []string{"GET", "POST"} {
		mux.HandleFunc(m+" /exec/{ns}/{pod}/{container}", s.exec)
		mux.HandleFunc(m+" /attach/{ns}/{pod}/{container}", s.attach)
		mux.HandleFunc(m+" /portForward/{ns}/{pod}", s.portForward)
	}
	return mux
}

// TLSConfig is the server side of the node server's TLS: its own serving
// pair, and client certificates verified against clientCAs when given
// (authorize then refuses requests without one).
func TLSConfig(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("node server certificate: %w", err)
	}
	return RotatingTLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }, clientCAFile)
}

// Serve serves h on ln with tlsCfg until ctx ends, then closes ln. The
// caller listens first so that it knows the port (port 0 picks one) before
// it reports it in the Node's status.
func Serve(ctx context.Context, ln net.Listener, tlsCfg *tls.Config, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{Handler: h, TLSConfig: tlsCfg, ReadHeaderTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if log != nil {
		log.Info("node server listening", "address", ln.Addr().String())
	}
	err := srv.ServeTLS(ln, "", "")
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("node server: %w", err)
}
