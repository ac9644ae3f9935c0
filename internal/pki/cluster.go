package pki

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/berth/berth/internal/atomicfile"
)

// Component identities the server issues client certificates for.
var (
	AdminIdentity      = Identity{CommonName: "berth-admin", Organizations: []string{"system:masters"}, Client: true}
	SchedulerIdentity  = Identity{CommonName: "system:kube-scheduler", Client: true}
	ControllerIdentity = Identity{CommonName: "system:kube-controller-manager", Client: true}
	// CoreDNSIdentity is the server's in-process cluster DNS.
	CoreDNSIdentity = Identity{CommonName: "system:coredns", Client: true}
	// APIServerClientIdentity is how the API server calls node agents (logs, exec).
	APIServerClientIdentity = Identity{CommonName: "system:apiserver", Organizations: []string{"system:masters"}, Client: true}
)

// Cluster is the server side's PKI: three trust domains (who serves the
// API, who may call it, which node servers the API server calls) and the API
// server's own serving certificate.
type Cluster struct {
	Dir      string
	ServerCA *CA // signs the API serving certificate; clients pin it
	ClientCA *CA // signs every client identity, including nodes' CSRs
	// NodeServingCA signs node servers' certificates (the local node's, and
	// joined nodes' kubelet-serving CSRs); only the API server trusts it, so
	// a node's certificate, whatever names it carries, never passes for the
	// API server's.
	NodeServingCA *CA
	// ServingCertFile and ServingKeyFile are the API server's TLS pair.
	ServingCertFile, ServingKeyFile string
	// FrontProxyCA signs the client certificate the API aggregator
	// presents to extension API servers (FrontProxyClientCertFile and
	// KeyFile); they trust it through extension-apiserver-authentication's
	// requestheader-client-ca-file, and nothing else does.
	FrontProxyCA                                      *CA
	FrontProxyClientCertFile, FrontProxyClientKeyFile string
}

// FrontProxyClientIdentity is the aggregator's identity towards extension
// API servers (their requestheader-allowed-names), as kubeadm names it.
var FrontProxyClientIdentity = Identity{CommonName: "front-proxy-client", Client: true}

// ServingNames are the names and addresses the serving certificate must cover.
type ServingNames struct {
	DNSNames []string
	IPs      []net.IP
}

// renewBefore is how long before expiry a leaf certificate is reissued at start-up.
const renewBefore = 30 * 24 * time.Hour

// LoadOrCreateCluster creates (first start) or loads (later starts) the CAs
// under DIR and makes sure the serving certificate covers names.
func LoadOrCreateCluster(dir string, names ServingNames) (*Cluster, error) {
	serverCA, err := LoadOrCreateCA(dir, "server-ca")
	if err != nil {
		return nil, fmt.Errorf("server CA: %w", err)
	}
	clientCA, err := LoadOrCreateCA(dir, "client-ca")
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	nodeServingCA, err := LoadOrCreateCA(dir, "node-serving-ca")
	if err != nil {
		return nil, fmt.Errorf("node serving CA: %w", err)
	}
	frontProxyCA, err := LoadOrCreateCA(dir, "front-proxy-ca")
	if err != nil {
		return nil, fmt.Errorf("front proxy CA: %w", err)
	}
	c := &Cluster{
		Dir: dir, ServerCA: serverCA, ClientCA: clientCA, NodeServingCA: nodeServingCA, FrontProxyCA: frontProxyCA,
		ServingCertFile:          filepath.Join(dir, "apiserver.crt"),
		ServingKeyFile:           filepath.Join(dir, "apiserver.key"),
		FrontProxyClientCertFile: filepath.Join(dir, "front-proxy-client.crt"),
		FrontProxyClientKeyFile:  filepath.Join(dir, "front-proxy-client.key"),
	}
	if err := c.ensureServing(names); err != nil {
		return nil, err
	}
	if err := c.ensureFrontProxyClient(); err != nil {
		return nil, err
	}
	return c, nil
}

// ensureFrontProxyClient issues the aggregator's client certificate when it
// is missing, near expiry, or not from the current front proxy CA.
func (c *Cluster) ensureFrontProxyClient() error {
	if certs, _, _, err := LoadKeyPair(c.FrontProxyClientCertFile, c.FrontProxyClientKeyFile); err == nil &&
		time.Until(certs[0].NotAfter) > renewBefore && certs[0].CheckSignatureFrom(c.FrontProxyCA.Cert) == nil {
		return nil
	} else if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("load front proxy client certificate: %w", err)
	}
	certPEM, keyPEM, err := c.FrontProxyCA.Issue(FrontProxyClientIdentity)
	if err != nil {
		return fmt.Errorf("front proxy client certificate: %w", err)
	}
	if err := atomicfile.WriteFile(c.FrontProxyClientKeyFile, keyPEM, 0o600); err != nil {
		return err
	}
	return atomicfile.WriteFile(c.FrontProxyClientCertFile, certPEM, 0o644)
}

func (c *Cluster) ensureServing(names ServingNames) error {
	if certs, _, _, err := LoadKeyPair(c.ServingCertFile, c.ServingKeyFile); err == nil &&
		covers(certs[0], names) && time.Until(certs[0].NotAfter) > renewBefore &&
		certs[0].CheckSignatureFrom(c.ServerCA.Cert) == nil {
		return nil
	} else if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("load serving certificate: %w", err)
	}
	certPEM, keyPEM, err := c.ServerCA.Issue(Identity{
		CommonName: "berth-apiserver", DNSNames: names.DNSNames, IPs: names.IPs, Server: true,
	})
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(c.ServingKeyFile, keyPEM, 0o600); err != nil {
		return err
	}
	return atomicfile.WriteFile(c.ServingCertFile, append(certPEM, c.ServerCA.CertPEM...), 0o644)
}

func covers(cert *x509.Certificate, names ServingNames) bool {
	for _, n := range names.DNSNames {
		if !slices.Contains(cert.DNSNames, n) {
			return false
		}
	}
	for _, ip := range names.IPs {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// DefaultServingNames covers loopback, the host name and every address of
// this machine, plus extra SANs (--tls-san).
func DefaultServingNames(extra []string) ServingNames {
	names := ServingNames{DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}}
	if h, err := os.Hostname(); err == nil {
		names.DNSNames = append(names.DNSNames, h)
	}
	names.IPs = append(names.IPs, net.IPv4(127, 0, 0, 1), net.IPv6loopback)
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
				names.IPs = append(names.IPs, ipn.IP)
			}
		}
	}
	for _, s := range extra {
		if ip := net.ParseIP(s); ip != nil {
			names.IPs = append(names.IPs, ip)
		} else if s != "" {
			names.DNSNames = append(names.DNSNames, s)
		}
	}
	return names
}

// NodeIdentity is the client identity of node NAME's agent, as the Node
// authorizer and upstream's kubelet expect it.
func NodeIdentity(name string) Identity {
	return Identity{CommonName: "system:node:" + name, Organizations: []string{"system:nodes"}, Client: true}
}
