package network

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

// TestPodCIDRChangeMovesNewPodsAndKeepsOldOnes runs berth's own default
// network (bridge berth0) inside a namespace standing in for the host, so
// the host's own berth0 is never touched: pods set up before a pod CIDR
// change keep their addresses, new ones come from the new CIDR, and the
// bridge's gateway becomes the new CIDR's first address.
func TestPodCIDRChangeMovesNewPodsAndKeepsOldOnes(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.CNIPlugins)
	ctx := context.Background()
	stateDir := t.TempDir()
	hostNS, err := NewNetNS(filepath.Join(stateDir, "netns"), "host")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RemoveNetNS(hostNS) })
	m, err := New(Config{BinDirs: []string{hostcheck.CNIBinDir()}, ConfDir: t.TempDir(), StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	// CNI plugins are exec'd from the calling thread, so they inherit the
	// stand-in host namespace and create berth0 there.
	setup := func(name string) (Pod, string) {
		t.Helper()
		nsPath, err := NewNetNS(filepath.Join(stateDir, "netns"), name)
		if err != nil {
			t.Fatal(err)
		}
		pod := Pod{ID: "sandbox-" + name, Name: name, Namespace: "default", UID: "uid-" + name, NetNS: nsPath}
		t.Cleanup(func() {
			WithNetNS(hostNS, func() error { return m.Teardown(context.Background(), pod) })
			RemoveNetNS(nsPath)
		})
		var res Result
		if err := WithNetNS(hostNS, func() (err error) { res, err = m.Setup(ctx, pod); return err }); err != nil {
			t.Fatalf("Setup %s: %v", name, err)
		}
		return pod, res.IP
	}

	if err := m.SetPodCIDR("10.66.0.0/24"); err != nil {
		t.Fatal(err)
	}
	old, oldIP := setup("before")
	assertIn(t, oldIP, "10.66.0.0/24")
	assertBridgeAddrs(t, hostNS, "10.66.0.1/24")

	if err := m.SetPodCIDR("10.66.5.0/24"); err != nil {
		t.Fatal(err)
	}
	_, newIP := setup("after")
	assertIn(t, newIP, "10.66.5.0/24")
	assertBridgeAddrs(t, hostNS, "10.66.5.1/24")
	if inside := addrsIn(t, old.NetNS); !strings.Contains(inside, oldIP+"/24") {
		t.Fatalf("pod set up before the change lost %s: has %s", oldIP, inside)
	}
	// The old pod's lease is released by container ID although the
	// network now names another range.
	if err := WithNetNS(hostNS, func() error { return m.Teardown(ctx, old) }); err != nil {
		t.Fatalf("Teardown of the old pod: %v", err)
	}
	if leases, _ := filepath.Glob(filepath.Join(stateDir, "networks", "*", oldIP)); len(leases) != 0 {
		t.Fatalf("old pod's lease %v not released", leases)
	}
}

func assertIn(t *testing.T, ip, cidr string) {
	t.Helper()
	_, n, _ := net.ParseCIDR(cidr)
	if !n.Contains(net.ParseIP(ip)) {
		t.Fatalf("pod IP %q not in %s", ip, cidr)
	}
}

// assertBridgeAddrs checks berth0's IPv4 addresses in the namespace at ns.
func assertBridgeAddrs(t *testing.T, ns, want string) {
	t.Helper()
	var got string
	err := WithNetNS(ns, func() error {
		out, err := exec.Command("ip", "-4", "-o", "addr", "show", "dev", defaultBridge).CombinedOutput()
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if f := strings.Fields(line); len(f) >= 4 {
				got = strings.TrimSpace(got + " " + f[3])
			}
		}
		return err
	})
	if err != nil || got != want {
		t.Fatalf("%s addresses = %q (%v); want %q", defaultBridge, got, err, want)
	}
}

// TestWaitForPodCIDRHoldsTheNetworkBack: with WaitForPodCIDR the default
// network exists only once a pod CIDR arrives; until then the network is
// not ready and pods are refused. A restart finds the config written then.
func TestWaitForPodCIDRHoldsTheNetworkBack(t *testing.T) {
	hostcheck.Require(t, hostcheck.CNIPlugins)
	ctx := context.Background()
	confDir, stateDir := t.TempDir(), t.TempDir()
	cfg := Config{BinDirs: []string{hostcheck.CNIBinDir()}, ConfDir: confDir, StateDir: stateDir, WaitForPodCIDR: true}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fileExists(filepath.Join(confDir, DefaultConfFile)) {
		t.Fatal("default network written before any pod CIDR")
	}
	if err := m.Ready(ctx); err == nil || !strings.Contains(err.Error(), "pod CIDR") {
		t.Fatalf("Ready before a pod CIDR = %v", err)
	}
	if _, err := m.Setup(ctx, Pod{ID: "early", NetNS: "/nonexistent"}); err == nil {
		t.Fatal("a pod was set up before the pod CIDR arrived")
	}
	if err := m.Teardown(ctx, Pod{ID: "early"}); err != nil {
		t.Fatalf("Teardown with no network: %v", err)
	}

	if err := m.SetPodCIDR("10.66.3.0/24"); err != nil {
		t.Fatal(err)
	}
	if err := m.Ready(ctx); err != nil {
		t.Fatalf("Ready after the pod CIDR: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(confDir, DefaultConfFile))
	if err != nil || !strings.Contains(string(data), "10.66.3.0/24") {
		t.Fatalf("default network after SetPodCIDR: %v %s", err, data)
	}

	restarted, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := restarted.Ready(ctx); err != nil {
		t.Fatalf("Ready after a restart: %v", err)
	}
}
