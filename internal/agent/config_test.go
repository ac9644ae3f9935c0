package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth/berth/internal/agent/gc"
)

func validConfig(t *testing.T) Config {
	dir := t.TempDir()
	kc := filepath.Join(dir, "node.kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return Config{Kubeconfig: kc, NodeName: "node-a", DataDir: dir, RuntimeEndpoint: "unix:///run/containerd/containerd.sock"}
}

const goodJoinToken = "berth::sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef::abcdef.0123456789abcdef"

func TestValidate(t *testing.T) {
	if err := validConfig(t).Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	joining := validConfig(t)
	joining.Kubeconfig, joining.Server, joining.Token = "", "https://127.0.0.1:6443", goodJoinToken
	if err := joining.Validate(); err != nil {
		t.Fatalf("valid joining config refused: %v", err)
	}
	for _, tc := range []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"no node name", func(c *Config) { c.NodeName = "" }, "--node-name is required"},
		{"bad node name", func(c *Config) { c.NodeName = "Node_A" }, "--node-name \"Node_A\""},
		{"token and kubeconfig", func(c *Config) { c.Server, c.Token = "https://127.0.0.1:6443", goodJoinToken }, "exclude each other"},
		{"token without server", func(c *Config) { c.Kubeconfig, c.Token = "", goodJoinToken }, "--server is required with --token"},
		{"bare bootstrap token, no pin", func(c *Config) {
			c.Kubeconfig, c.Server, c.Token = "", "https://127.0.0.1:6443", "abcdef.0123456789abcdef"
		}, "--token: join token: want berth::sha256:"},
		{"no credentials", func(c *Config) { c.Kubeconfig = "" }, "--token (to join) or --kubeconfig"},
		{"plain http server", func(c *Config) { c.Server = "http://127.0.0.1:6443" }, "want an https:// URL"},
		{"one plain http replica", func(c *Config) { c.Server = "https://127.0.0.1:6443,http://127.0.0.1:6444" }, "want an https:// URL"},
		{"no runtime", func(c *Config) { c.RuntimeEndpoint = "" }, "--runtime-endpoint is required"},
		{"tcp runtime", func(c *Config) { c.RuntimeEndpoint = "tcp://127.0.0.1:1" }, "want unix:///absolute/path"},
		{"sysctl not namespaced", func(c *Config) { c.AllowedUnsafeSysctls = []string{"net.core.*", "vm.swappiness"} },
			`--allowed-unsafe-sysctls: the sysctls "vm.swappiness" are not known to be namespaced`},
		{"malformed sysctl pattern", func(c *Config) { c.AllowedUnsafeSysctls = []string{"net.*.x"} }, `--allowed-unsafe-sysctls: sysctl "net.*.x" must have at most 253 characters`},
		{"relative data dir", func(c *Config) { c.DataDir = "data" }, "--data-dir \"data\""},
		{"negative reserve", func(c *Config) { c.ReservedMemory = resource.MustParse("-1Gi") }, "must not be negative"},
		{"bad node IP", func(c *Config) { c.NodeIP = "10.0.0" }, "--node-ip \"10.0.0\""},
		{"port out of range", func(c *Config) { c.Port = 70000 }, "--port 70000"},
		{"unknown proxy mode", func(c *Config) { c.ProxyMode = "iptables" }, `--proxy-mode "iptables": want nftables or none`},
		{"bad cluster CIDR", func(c *Config) { c.ProxyMode, c.ClusterCIDR = "nftables", "10.88.0.0/16,10.99.0.0" }, `--cluster-cidr "10.99.0.0"`},
		{"cert without key", func(c *Config) { c.TLSCertFile = "/x.crt" }, "--tls-cert-file and --tls-private-key-file go together"},
		{"node server without client CA", func(c *Config) { c.TLSCertFile, c.TLSPrivateKeyFile = "/x.crt", "/x.key" }, "--client-ca-file is required"},
		{"missing kubeconfig", func(c *Config) { c.Kubeconfig = "/nonexistent/kubeconfig" }, "--kubeconfig: stat"},
		{"image GC threshold over 100", func(c *Config) { c.GC = gc.DefaultPolicy; c.GC.HighPercent = 120 }, "high threshold 120%: want 0-100"},
		{"image GC low above high", func(c *Config) { c.GC = gc.DefaultPolicy; c.GC.LowPercent = 90 }, "low threshold 90% is above the high threshold 85%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig(t)
			tc.modify(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}
