package differential

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/berth/berth/internal/pki"
)

// etcdMember is an etcd member embedded in the test's process, serving
// clients over mutual TLS on a loopback port, and the test's own client.
type etcdMember struct {
	Endpoint                  string
	CAFile, CertFile, KeyFile string // what a client needs
	Client                    *clientv3.Client
}

// startEtcd starts a member in dir/member with certificates in dir, closed
// when the test ends.
func startEtcd(t *testing.T, dir string) *etcdMember {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(dir, "etcd-ca")
	if err != nil {
		t.Fatal(err)
	}
	m := &etcdMember{CAFile: filepath.Join(dir, "etcd-ca.crt")}
	write := func(name string, id pki.Identity) (string, string) {
		certPEM, keyPEM, err := ca.Issue(id)
		if err != nil {
			t.Fatal(err)
		}
		crt, key := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
		if err := os.WriteFile(crt, certPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		return crt, key
	}
	serverCrt, serverKey := write("etcd-server", pki.Identity{CommonName: "etcd-server", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	m.CertFile, m.KeyFile = write("etcd-client", pki.Identity{CommonName: "etcd-client", Client: true})

	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "member")
	client, _ := url.Parse("https://127.0.0.1:0")
	peer, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.ClientTLSInfo.CertFile = serverCrt
	cfg.ClientTLSInfo.KeyFile = serverKey
	cfg.ClientTLSInfo.TrustedCAFile = m.CAFile
	cfg.ClientTLSInfo.ClientCertAuth = true
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("embedded etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		t.Fatal("embedded etcd not ready after a minute")
	}
	m.Endpoint = "https://" + e.Clients[0].Addr().String()

	tlsInfo := transport.TLSInfo{CertFile: m.CertFile, KeyFile: m.KeyFile, TrustedCAFile: m.CAFile}
	tlsConfig, err := tlsInfo.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	m.Client, err = clientv3.New(clientv3.Config{Endpoints: []string{m.Endpoint}, TLS: tlsConfig, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Client.Close() })
	return m
}

// keysOf returns the stored keys of the object namespace/name (or name,
// for namespace ""): every key under /registry/ that ends in that path.
func (m *etcdMember) keysOf(ctx context.Context, namespace, name string) ([]string, map[string][]byte, error) {
	resp, err := m.Client.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		return nil, nil, err
	}
	suffix := "/" + name
	if namespace != "" {
		suffix = "/" + namespace + "/" + name
	}
	var keys []string
	values := map[string][]byte{}
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		if len(k) > len(suffix) && k[len(k)-len(suffix):] == suffix {
			keys = append(keys, k)
			values[k] = kv.Value
		}
	}
	return keys, values, nil
}
