package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/server/clusterdns"
)

// clusterDNS is the server's cluster DNS: CoreDNS in-process on the
// advertised address (internal/server/clusterdns), reading the API as
// system:coredns, and the kube-dns Service naming every replica's.
type clusterDNS struct {
	domain  string
	address net.IP
	port    int
	service *kubeDNSService
	logger  *slog.Logger
}

// newClusterDNS is nil when cluster DNS is off, or when this replica has no
// address to advertise (then nothing could reach it through the Service).
func newClusterDNS(cfg Config, kube *kubernetesService) (*clusterDNS, error) {
	if cfg.DisableClusterDNS {
		return nil, nil
	}
	logger := cfg.Logger.With("component", "cluster-dns")
	if kube.noAddress != nil {
		logger.Warn("cluster DNS is off: this server has no address to advertise", "err", kube.noAddress)
		return nil, nil
	}
	service, err := newKubeDNSService(cfg, kube.leases)
	if err != nil {
		return nil, err
	}
	return &clusterDNS{domain: cfg.clusterDomain(), address: kube.config.PublicIP, port: cfg.ClusterDNSPort,
		service: service, logger: logger}, nil
}

// start serves DNS and keeps the kube-dns Service until ctx ends; wait
// then stops both.
func (d *clusterDNS) start(ctx context.Context, lb *inprocess.Loopback) (wait func(), err error) {
	client, err := loopbackConfig(lb, pki.CoreDNSIdentity)
	if err != nil {
		return nil, fmt.Errorf("cluster DNS: %w", err)
	}
	srv, err := clusterdns.Start(clusterdns.Config{
		Domain: d.domain, Address: d.address, Port: d.port, Client: client, Logger: d.logger,
	})
	if err != nil {
		// The advertised address need not be this host's (a NAT or load
		// balancer in front): the API still serves, without cluster DNS.
		d.logger.Error("cluster DNS is off: cannot listen on the advertised address", "err", err)
		return func() {}, nil
	}
	waitService, err := d.service.start(ctx, lb, int32(srv.Port()))
	if err != nil {
		return nil, errorsJoinStop(err, srv)
	}
	return func() {
		waitService()
		if err := srv.Stop(); err != nil {
			d.logger.Warn("cluster DNS did not stop cleanly", "err", err)
		}
	}, nil
}

// errorsJoinStop stops srv after a failed start, keeping err first.
func errorsJoinStop(err error, srv *clusterdns.Server) error {
	if stopErr := srv.Stop(); stopErr != nil {
		return fmt.Errorf("%w (and %v)", err, stopErr)
	}
	return err
}

// clusterDomain is --cluster-domain, cluster.local when unset.
func (c *Config) clusterDomain() string {
	if c.ClusterDomain == "" {
		return defaultClusterDomain
	}
	return c.ClusterDomain
}

const defaultClusterDomain = "cluster.local"

// localAgentDNSFlags point the local agent's pods at the kube-dns Service
// (none when cluster DNS is off: the host's resolver).
func (c *Config) localAgentDNSFlags() ([]string, error) {
	flags := []string{"--cluster-domain", c.clusterDomain(), "--cluster-dns="}
	if c.DisableClusterDNS {
		return flags, nil
	}
	ip, err := c.kubeDNSServiceIP()
	if err != nil {
		return nil, err
	}
	flags[len(flags)-1] += ip.String()
	return flags, nil
}
