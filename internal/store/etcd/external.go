package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap/zapcore"
)

const (
	externalDialTimeout  = 10 * time.Second
	externalProbeTimeout = 10 * time.Second
)

// External connects to an etcd cluster over mutual TLS: every endpoint must
// be https, and the CA, client certificate and key are all required. It
// fails unless one quorum read succeeds, so a wrong address or credential is
// reported at start-up rather than at the first request.
func External(ctx context.Context, endpoints []string, caFile, certFile, keyFile string, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if len(endpoints) == 0 {
		return nil, errors.New("external etcd: no endpoints")
	}
	for _, ep := range endpoints {
		if !strings.HasPrefix(ep, "https://") {
			return nil, fmt.Errorf("external etcd: endpoint %q is not https (mutual TLS is required)", ep)
		}
	}
	if caFile == "" || certFile == "" || keyFile == "" {
		return nil, errors.New("external etcd: CA file, client certificate and key are all required")
	}
	tlsInfo := transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: caFile}
	tlsConfig, err := tlsInfo.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("external etcd: TLS configuration: %w", err)
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		TLS:         tlsConfig,
		DialTimeout: externalDialTimeout,
		Logger:      zapToSlog(logger.With("component", "etcd-client"), zapcore.WarnLevel),
	})
	if err != nil {
		return nil, fmt.Errorf("external etcd %v: %w", endpoints, err)
	}
	s := newStore(client, logger, client.Close)
	probeCtx, cancel := context.WithTimeout(ctx, externalProbeTimeout)
	defer cancel()
	if _, err := s.CurrentRevision(probeCtx); err != nil {
		client.Close()
		return nil, fmt.Errorf("external etcd %v unreachable: %w", endpoints, err)
	}
	return s, nil
}
