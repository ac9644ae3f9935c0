package network

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadConfig writes an arbitrary network config into the conf dir, as
// an operator (or a CNI installer) would, and loads it the way the runtime
// does at start. A config that loads has plugins with a type.
func FuzzLoadConfig(f *testing.F) {
	def, err := defaultConfList(DefaultSubnet, "/var/lib/berth/networks")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(0), def)
	f.Add(uint8(0), []byte(`{"cniVersion":"1.0.0","name":"t","plugins":[{"type":"bridge","ipam":{"type":"host-local","ranges":[[{"subnet":"10.1.0.0/24"}]]}},{"type":"portmap","capabilities":{"portMappings":true}}]}`))
	f.Add(uint8(0), []byte(`{"cniVersion":"1.1.0","name":"t","disableCheck":true,"disableGC":"yes","plugins":[]}`))
	f.Add(uint8(1), []byte(`{"cniVersion":"0.3.1","name":"t","type":"bridge"}`))
	f.Add(uint8(2), []byte(`{"cniVersion":"0.4.0","name":"t","type":"macvlan","master":"eth0"}`))
	exts := []string{".conflist", ".conf", ".json"}
	f.Fuzz(func(t *testing.T, ext uint8, conf []byte) {
		confDir, stateDir := t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(confDir, "10-fuzz"+exts[int(ext)%len(exts)]), conf, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := New(Config{BinDirs: []string{t.TempDir()}, ConfDir: confDir, StateDir: stateDir})
		if err != nil {
			return
		}
		// The name is not checked here: libcni loads an empty one, and
		// refuses it when a pod is attached (Setup).
		list := m.current()
		if list == nil {
			t.Fatalf("loaded %q as no network", conf)
		}
		for _, p := range list.Plugins {
			if p.Network == nil || p.Network.Type == "" {
				t.Fatalf("loaded %q with a plugin of no type: %+v", conf, p)
			}
		}
	})
}

// FuzzSetPodCIDR hands arbitrary pod CIDRs (the Node's spec.podCIDR, via
// CRI UpdateRuntimeConfig) to the default network: one that is taken is a
// valid CIDR and loads.
func FuzzSetPodCIDR(f *testing.F) {
	for _, s := range []string{"10.244.1.0/24", "fd00::/64", "10.0.0.1/32", "10.0.0.0/33", "", "10.0.0.0/24\",\"x\":\"y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cidr string) {
		m, err := New(Config{BinDirs: []string{t.TempDir()}, ConfDir: t.TempDir(), StateDir: t.TempDir(), WaitForPodCIDR: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.SetPodCIDR(cidr); err != nil {
			return
		}
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			t.Fatalf("took pod CIDR %q: %v", cidr, err)
		}
		if m.current() == nil {
			t.Fatalf("pod CIDR %q taken, no network loaded", cidr)
		}
	})
}

// cniVersions are the result versions a plugin may answer in, as its
// network config's cniVersion says.
var cniVersions = []string{"1.0.0", "1.1.0", "0.4.0", "0.3.1", "0.3.0", "0.2.0", "0.1.0"}

// FuzzPluginResult has a plugin answer ADD with arbitrary stdout and exit
// code, through libcni into Setup, as a broken or hostile plugin could. An
// answer Setup takes gives the pod a valid IP.
func FuzzPluginResult(f *testing.F) {
	dir := f.TempDir()
	result, code := filepath.Join(dir, "result"), filepath.Join(dir, "code")
	binDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		f.Fatal(err)
	}
	plugin := fmt.Sprintf("#!/bin/sh\n[ \"$CNI_COMMAND\" = ADD ] || exit 0\ncat %s\nexit $(cat %s)\n", result, code)
	if err := os.WriteFile(filepath.Join(binDir, "fuzzplugin"), []byte(plugin), 0o755); err != nil {
		f.Fatal(err)
	}
	managers := make([]*Manager, len(cniVersions))
	for i, v := range cniVersions {
		confDir := filepath.Join(dir, "conf"+v)
		if err := os.Mkdir(confDir, 0o755); err != nil {
			f.Fatal(err)
		}
		conf := fmt.Sprintf(`{"cniVersion":%q,"name":"fuzz","plugins":[{"type":"fuzzplugin"}]}`, v)
		if err := os.WriteFile(filepath.Join(confDir, "10-fuzz.conflist"), []byte(conf), 0o644); err != nil {
			f.Fatal(err)
		}
		m, err := New(Config{BinDirs: []string{binDir}, ConfDir: confDir, StateDir: filepath.Join(dir, "state"+v)})
		if err != nil {
			f.Fatal(err)
		}
		managers[i] = m
	}
	f.Add(uint8(0), false, []byte(`{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","mac":"0a:58:0a:f4:01:02","sandbox":"/ns"}],"ips":[{"interface":0,"address":"10.88.0.5/16","gateway":"10.88.0.1"}],"routes":[{"dst":"0.0.0.0/0"}],"dns":{}}`))
	f.Add(uint8(1), false, []byte(`{"cniVersion":"1.1.0","ips":[{"address":"fd00::5/64"},{"address":"10.88.0.5/16"}]}`))
	f.Add(uint8(2), false, []byte(`{"cniVersion":"0.4.0","ips":[{"version":"4","interface":-1,"address":"10.88.0.5/16"}]}`))
	f.Add(uint8(3), false, []byte(`{"cniVersion":"0.3.1","interfaces":[],"ips":[{"version":"4","interface":7,"address":"10.88.0.5/16"}]}`))
	f.Add(uint8(5), false, []byte(`{"cniVersion":"0.2.0","ip4":{"ip":"10.88.0.5/16","gateway":"10.88.0.1","routes":[{"dst":"0.0.0.0/0"}]},"dns":{}}`))
	f.Add(uint8(0), false, []byte(`{"cniVersion":"1.0.0","ips":[]}`))
	f.Add(uint8(0), true, []byte(`{"cniVersion":"1.0.0","code":7,"msg":"no","details":"x"}`))
	f.Add(uint8(0), false, []byte(`{"cniVersion":"0.1.0","ips":[{"address":"10.88.0.5/16"}]}`))
	f.Fuzz(func(t *testing.T, version uint8, fail bool, stdout []byte) {
		exit := "0"
		if fail {
			exit = "1"
		}
		if err := os.WriteFile(result, stdout, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(code, []byte(exit), 0o644); err != nil {
			t.Fatal(err)
		}
		m := managers[int(version)%len(managers)]
		pod := Pod{ID: "fuzz", Name: "p", Namespace: "default", UID: "u", NetNS: filepath.Join(dir, "netns")}
		res, err := m.Setup(context.Background(), pod)
		if err != nil {
			return
		}
		if fail {
			t.Fatalf("Setup took the answer of a plugin that failed: %+v", res)
		}
		for _, ip := range append([]string{res.IP}, res.AdditionalIPs...) {
			if net.ParseIP(ip) == nil || strings.Contains(ip, "/") {
				t.Fatalf("plugin answer %q gave the pod IP %q", stdout, ip)
			}
		}
		if err := m.Teardown(context.Background(), pod); err != nil {
			t.Fatalf("Teardown: %v", err)
		}
	})
}
