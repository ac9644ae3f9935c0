// Package failover lets one client-go rest.Config reach several replicas of
// berth server: every new connection goes to the replica that last
// answered, and moves on to the next one when it cannot be reached. client-go
// re-dials after a broken connection and its reflectors re-list or resume
// their watches, so an agent carries on through the loss of a replica.
//
// This is done at dial time rather than with a local proxy (as k3s's agent
// load balancer does) because client-go already owns reconnection; all that
// is missing is a choice of address.
package failover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// ServerName is the TLS name every berth serving certificate carries
// (internal/pki.DefaultServingNames), so that each replica's certificate
// verifies whichever address it was reached on.
const ServerName = "kubernetes"

// dialTimeout bounds one attempt, so a dead replica costs seconds, not the
// kernel's minutes of SYN retries.
const dialTimeout = 5 * time.Second

// Configure points cfg at servers (https URLs with the same path) and makes
// it fail over between them. cfg keeps its credentials and CA; its Host
// becomes the first server's URL.
func Configure(cfg *rest.Config, servers []string) error {
	if len(servers) == 0 {
		return errors.New("failover: no servers")
	}
	addrs := make([]string, 0, len(servers))
	for _, s := range servers {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("server %q: want an https:// URL", s)
		}
		host := u.Host
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "443")
		}
		addrs = append(addrs, host)
	}
	d := &dialer{addrs: addrs}
	cfg.Host = servers[0]
	cfg.Dial = d.DialContext
	if cfg.TLSClientConfig.ServerName == "" {
		cfg.TLSClientConfig.ServerName = ServerName
	}
	return nil
}

type dialer struct {
	addrs []string
	net   net.Dialer

	mu      sync.Mutex
	current int // index of the replica that last accepted a connection
}

// DialContext ignores the address client-go derived from Host and tries the
// replicas in turn, starting with the last one that worked.
func (d *dialer) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	d.mu.Lock()
	start := d.current
	d.mu.Unlock()
	var errs []error
	for i := range d.addrs {
		idx := (start + i) % len(d.addrs)
		attempt, cancel := context.WithTimeout(ctx, dialTimeout)
		conn, err := d.net.DialContext(attempt, network, d.addrs[idx])
		cancel()
		if err == nil {
			d.mu.Lock()
			d.current = idx
			d.mu.Unlock()
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("no API server reachable: %w", errors.Join(errs...))
}
