package network

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"github.com/berth/berth/internal/runtime/nspin"
	"github.com/berth/berth/internal/testkit/hostcheck"
)

func TestNewWritesDefaultConfList(t *testing.T) {
	confDir := t.TempDir()
	m, err := New(Config{BinDirs: []string{"/usr/lib/cni"}, ConfDir: confDir, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	conf, err := libcni.NetworkConfFromFile(filepath.Join(confDir, DefaultConfFile))
	if err != nil {
		t.Fatalf("default conflist not loadable: %v", err)
	}
	var types []string
	for _, p := range conf.Plugins {
		types = append(types, p.Network.Type)
	}
	if got := strings.Join(types, ","); got != "bridge,portmap" {
		t.Fatalf("default plugins = %s", got)
	}

	if err := m.SetPodCIDR("10.77.0.0/16"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(confDir, DefaultConfFile))
	if !strings.Contains(string(data), "10.77.0.0/16") {
		t.Fatalf("pod CIDR not written: %s", data)
	}
	if err := m.SetPodCIDR("not-a-cidr"); err == nil {
		t.Fatal("bad CIDR accepted")
	}
	after, _ := os.ReadFile(filepath.Join(confDir, DefaultConfFile))
	if string(after) != string(data) {
		t.Fatal("bad CIDR changed the config")
	}
}

func TestOperatorConfigKept(t *testing.T) {
	confDir := t.TempDir()
	own := `{"cniVersion":"1.0.0","name":"mine","plugins":[{"type":"loopback"}]}`
	if err := os.WriteFile(filepath.Join(confDir, "05-mine.conflist"), []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{BinDirs: []string{"/usr/lib/cni"}, ConfDir: confDir, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetPodCIDR("10.77.0.0/16"); err != nil {
		t.Fatal(err)
	}
	if fileExists(filepath.Join(confDir, DefaultConfFile)) {
		t.Fatal("default config written beside the operator's")
	}
	if m.current().Name != "mine" {
		t.Fatalf("loaded %q", m.current().Name)
	}
}

// TestSetupAssignsIPInsideNetNS wires a real namespace through the real
// bridge and host-local plugins on a bridge private to this test.
func TestSetupAssignsIPInsideNetNS(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.CNIPlugins)
	ctx := context.Background()
	bridge := fmt.Sprintf("bt%d", os.Getpid()%100000)
	t.Cleanup(func() { exec.Command("ip", "link", "del", bridge).Run() })
	confDir, stateDir := t.TempDir(), t.TempDir()
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"t","plugins":[{"type":"bridge","bridge":%q,"isGateway":true,
		"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.201.7.0/24"}]]}},
		{"type":"portmap","capabilities":{"portMappings":true}}]}`, bridge, filepath.Join(stateDir, "ipam"))
	if err := os.WriteFile(filepath.Join(confDir, "10-t.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{BinDirs: []string{"/usr/lib/cni"}, ConfDir: confDir, StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	nsPath, err := NewNetNS(filepath.Join(stateDir, "netns"), "pod1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RemoveNetNS(nsPath) })
	if !nspin.IsPinned(nsPath) {
		t.Fatal("a fresh namespace is not a pinned namespace")
	}
	pod := Pod{ID: "sandbox1", Name: "p", Namespace: "default", UID: "u1", NetNS: nsPath,
		Ports: []PortMapping{{HostPort: 18080, ContainerPort: 80, Protocol: "tcp", HostIP: "127.0.0.1"}}}
	res, err := m.Setup(ctx, pod)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	_, subnet, _ := net.ParseCIDR("10.201.7.0/24")
	if !subnet.Contains(net.ParseIP(res.IP)) {
		t.Fatalf("IP %q not in the subnet", res.IP)
	}
	inside := addrsIn(t, nsPath)
	if !strings.Contains(inside, res.IP+"/24") || !strings.Contains(inside, "127.0.0.1/8") {
		t.Fatalf("namespace addresses %s lack %s and loopback", inside, res.IP)
	}
	if strings.Contains(addrsHere(t), res.IP+"/") {
		t.Fatal("pod IP visible in the host namespace")
	}

	if err := m.Teardown(ctx, pod); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	if err := m.Teardown(ctx, pod); err != nil {
		t.Fatalf("second Teardown: %v", err)
	}
	if strings.Contains(addrsIn(t, nsPath), res.IP) {
		t.Fatal("IP still assigned after teardown")
	}
	if err := RemoveNetNS(nsPath); err != nil {
		t.Fatal(err)
	}
	if nspin.IsPinned(nsPath) || fileExists(nsPath) {
		t.Fatal("namespace left behind")
	}
	if err := RemoveNetNS(nsPath); err != nil {
		t.Fatalf("second RemoveNetNS: %v", err)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func addrsIn(t *testing.T, nsPath string) string {
	t.Helper()
	var out string
	if err := WithNetNS(nsPath, func() error { out = addrsHere(t); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func addrsHere(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, a := range addrs {
		s = append(s, a.String())
	}
	return strings.Join(s, " ")
}

func TestNewNetNSRejectsBadName(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"", "../x", "a/b"} {
		if _, err := NewNetNS(dir, name); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
}

// TestPortmapRunsOnlyForPodsWithHostPorts: on berth's default network a pod
// without hostPorts is attached and detached without the portmap plugin (it
// would have nothing to do), a pod with one goes through it both ways; an
// operator's network runs every plugin as written. A wrapper ahead of the
// real plugin in the search path records each call.
func TestPortmapRunsOnlyForPodsWithHostPorts(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.CNIPlugins)
	for _, tc := range []struct {
		file          string
		portlessCalls string
	}{
		{DefaultConfFile, ""},
		{"10-operator.conflist", "ADD DEL "},
	} {
		t.Run(tc.file, func(t *testing.T) {
			ctx := context.Background()
			bridge := fmt.Sprintf("bp%d", os.Getpid()%100000)
			t.Cleanup(func() { exec.Command("ip", "link", "del", bridge).Run() })
			confDir, stateDir, wrapDir := t.TempDir(), t.TempDir(), t.TempDir()
			calls := filepath.Join(wrapDir, "calls")
			wrapper := "#!/bin/sh\nprintf '%s ' \"$CNI_COMMAND\" >>" + calls + "\nexec /usr/lib/cni/portmap\n"
			if err := os.WriteFile(filepath.Join(wrapDir, "portmap"), []byte(wrapper), 0o755); err != nil {
				t.Fatal(err)
			}
			conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":"t","plugins":[{"type":"bridge","bridge":%q,"isGateway":true,
				"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":"10.201.9.0/24"}]]}},
				{"type":"portmap","capabilities":{"portMappings":true}}]}`, bridge, filepath.Join(stateDir, "ipam"))
			if err := os.WriteFile(filepath.Join(confDir, tc.file), []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := New(Config{BinDirs: []string{wrapDir, "/usr/lib/cni"}, ConfDir: confDir, StateDir: stateDir})
			if err != nil {
				t.Fatal(err)
			}
			attach := func(name string, ports []PortMapping) string {
				t.Helper()
				os.Remove(calls)
				nsPath, err := NewNetNS(filepath.Join(stateDir, "netns"), name)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { RemoveNetNS(nsPath) })
				pod := Pod{ID: name, Name: name, Namespace: "default", UID: name, NetNS: nsPath, Ports: ports}
				if _, err := m.Setup(ctx, pod); err != nil {
					t.Fatalf("Setup %s: %v", name, err)
				}
				if err := m.Teardown(ctx, pod); err != nil {
					t.Fatalf("Teardown %s: %v", name, err)
				}
				got, _ := os.ReadFile(calls)
				return string(got)
			}
			if got := attach("portless", nil); got != tc.portlessCalls {
				t.Fatalf("portmap calls for a pod without hostPorts = %q, want %q", got, tc.portlessCalls)
			}
			ports := []PortMapping{{HostPort: 18081, ContainerPort: 80, Protocol: "tcp", HostIP: "127.0.0.1"}}
			if got := attach("ported", ports); got != "ADD DEL " {
				t.Fatalf("portmap calls for a pod with a hostPort = %q, want ADD then DEL", got)
			}
		})
	}
}
