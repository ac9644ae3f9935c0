package clusterdns

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/coredns/caddy"
	"k8s.io/client-go/rest"
)

// Config is one cluster DNS server's configuration.
type Config struct {
	// Domain is the cluster domain (--cluster-domain).
	Domain string
	// Address and Port are where it listens, UDP and TCP; Port 0 picks
	// one free for both.
	Address net.IP
	Port    int
	// ResolvConf names the upstream resolvers for names outside the
	// cluster (the host's /etc/resolv.conf when empty).
	ResolvConf string
	// Client reaches the API; its User-Agent is set to coredns.
	Client *rest.Config
	Logger *slog.Logger
}

// UserAgent is what the API's audit log and metrics see of cluster DNS.
const UserAgent = "coredns"

// Server is a running cluster DNS server.
type Server struct {
	instance *caddy.Instance
	key      string
	port     int
	logger   *slog.Logger
}

// Port is the port the server listens on, UDP and TCP.
func (s *Server) Port() int { return s.port }

// Start starts a server that answers until Stop. The kubernetes plugin
// waits up to 5 s for its first list of Services before serving (it then
// serves anyway, as CoreDNS does, and its answers fill in once synced).
func Start(cfg Config) (*Server, error) {
	if err := register(); err != nil {
		return nil, fmt.Errorf("cluster DNS: register CoreDNS plugins: %w", err)
	}
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = "/etc/resolv.conf"
	}
	if cfg.Port == 0 {
		port, err := freePort(cfg.Address)
		if err != nil {
			return nil, err
		}
		cfg.Port = port
	}
	key, err := instanceKey()
	if err != nil {
		return nil, err
	}
	client := rest.CopyConfig(cfg.Client)
	client.UserAgent = UserAgent
	clients.Store(key, client)
	instance, err := caddy.Start(caddy.CaddyfileInput{
		Filepath:       key,
		Contents:       []byte(corefile(cfg.Domain, cfg.Address, cfg.Port, cfg.ResolvConf)),
		ServerTypeName: "dns",
	})
	if err != nil {
		clients.Delete(key)
		return nil, fmt.Errorf("cluster DNS on %s: %w", listenAddress(cfg.Address, cfg.Port), err)
	}
	s := &Server{instance: instance, key: key, port: cfg.Port, logger: cfg.Logger}
	s.logger.Info("cluster DNS is serving", "address", listenAddress(cfg.Address, cfg.Port), "domain", cfg.Domain)
	return s, nil
}

// instanceKey names one instance's Corefile, unique in the process.
func instanceKey() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("cluster DNS instance name: %w", err)
	}
	return "berth-corefile-" + hex.EncodeToString(b), nil
}

// Stop closes the listeners and stops the plugins' watches.
func (s *Server) Stop() error {
	defer s.instance.Wait()
	defer clients.Delete(s.key)
	err := errors.Join(append(s.instance.ShutdownCallbacks(), s.instance.Stop())...)
	if err != nil {
		return fmt.Errorf("stop cluster DNS: %w", err)
	}
	return nil
}
