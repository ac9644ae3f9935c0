package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandboxFiles are the per-pod files every container of the pod mounts.
type sandboxFiles struct {
	Hostname   string
	Hosts      string
	ResolvConf string
	Shm        string // "" with host IPC
}

// writeSandboxFiles creates dir with the pod's hostname, hosts and
// resolv.conf files and, unless the pod shares the host's IPC, its own
// /dev/shm tmpfs.
func writeSandboxFiles(dir string, cfg *PodSandboxConfig) (sandboxFiles, error) {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return sandboxFiles{}, fmt.Errorf("create sandbox dir: %w", err)
	}
	nsOpts := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	hostNet := nsOpts.GetNetwork() == runtimeapi.NamespaceMode_NODE
	f := sandboxFiles{
		Hostname:   filepath.Join(dir, "hostname"),
		Hosts:      filepath.Join(dir, "hosts"),
		ResolvConf: filepath.Join(dir, "resolv.conf"),
	}
	hostname := cfg.GetHostname()
	if hostNet || hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return f, fmt.Errorf("read host name: %w", err)
		}
		hostname = h
	}
	if err := os.WriteFile(f.Hostname, []byte(hostname+"\n"), 0o644); err != nil {
		return f, fmt.Errorf("write hostname: %w", err)
	}
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	if hostNet {
		if data, err := os.ReadFile("/etc/hosts"); err == nil {
			hosts = string(data)
		}
	}
	if err := os.WriteFile(f.Hosts, []byte(hosts), 0o644); err != nil {
		return f, fmt.Errorf("write hosts: %w", err)
	}
	resolv, err := resolvConf(cfg.GetDnsConfig())
	if err != nil {
		return f, err
	}
	if err := os.WriteFile(f.ResolvConf, resolv, 0o644); err != nil {
		return f, fmt.Errorf("write resolv.conf: %w", err)
	}
	if nsOpts.GetIpc() != runtimeapi.NamespaceMode_NODE {
		f.Shm = filepath.Join(dir, "shm")
		if err := os.MkdirAll(f.Shm, 0o700); err != nil {
			return f, fmt.Errorf("create shm dir: %w", err)
		}
		if err := unix.Mount("shm", f.Shm, "tmpfs", unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=65536k"); err != nil {
			return f, fmt.Errorf("mount sandbox shm: %w", err)
		}
	}
	return f, nil
}

// resolvConf renders the pod's DNS config, or copies the host's when the
// pod has none (what containerd and CRI-O do).
func resolvConf(dns *runtimeapi.DNSConfig) ([]byte, error) {
	if dns == nil {
		data, err := os.ReadFile("/etc/resolv.conf")
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read host resolv.conf: %w", err)
		}
		return data, nil
	}
	var b strings.Builder
	if len(dns.GetSearches()) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(dns.GetSearches(), " "))
	}
	for _, s := range dns.GetServers() {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(dns.GetOptions()) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(dns.GetOptions(), " "))
	}
	return []byte(b.String()), nil
}

// addHostsEntry adds the pod's own address once CNI has given it one.
func addHostsEntry(path, ip, hostname string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open hosts: %w", err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s\t%s\n", ip, hostname); err != nil {
		return fmt.Errorf("write hosts: %w", err)
	}
	return nil
}

// removeSandboxFiles unmounts the shm tmpfs and deletes dir; repeatable.
func removeSandboxFiles(dir string) error {
	shm := filepath.Join(dir, "shm")
	if err := unix.Unmount(shm, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount sandbox shm: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove sandbox dir: %w", err)
	}
	return nil
}
