// Package network gives each pod sandbox its network namespace and wires it
// up through CNI (libcni with the host's plugins), so berth speaks the same
// plugin interface as every other Kubernetes runtime.
package network

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"
)

// Config says where the plugins and network configs are.
type Config struct {
	BinDirs  []string // CNI plugin directories, e.g. /usr/lib/cni
	ConfDir  string   // network configs; the default conflist is written here if empty
	StateDir string   // libcni result cache and host-local leases, private to this runtime
	// WaitForPodCIDR holds back the default network until the node's pod
	// CIDR arrives (CRI UpdateRuntimeConfig), as containerd's CNI conf
	// template does: until then the network is not ready, so the node is
	// NotReady and no pod gets an address outside the node's range.
	WaitForPodCIDR bool
	Logger         *slog.Logger
}

// PortMapping is one hostPort mapping handed to the portmap plugin.
type PortMapping struct {
	HostPort      int32
	ContainerPort int32
	Protocol      string // tcp, udp or sctp
	HostIP        string
}

// Pod identifies one sandbox's attachment.
type Pod struct {
	ID        string // sandbox ID, the CNI container ID
	Name      string
	Namespace string
	UID       string
	NetNS     string // path of the pinned namespace
	Ports     []PortMapping
}

// Result is what the network gave a pod.
type Result struct {
	IP            string
	AdditionalIPs []string
}

// errNoPodCIDR is the network's state while WaitForPodCIDR holds it back.
var errNoPodCIDR = errors.New("no CNI network config yet: waiting for the node's pod CIDR (CRI UpdateRuntimeConfig)")

// Manager attaches pods to the configured network.
type Manager struct {
	cni     *libcni.CNIConfig
	confDir string
	ipamDir string
	log     *slog.Logger

	waitForPodCIDR bool

	mu       sync.RWMutex
	netConf  *libcni.NetworkConfigList
	confPath string
	// withoutPorts is netConf for pods with no hostPort: berth's default
	// network minus its portmap plugin, which has nothing to do for them
	// but costs an exec on setup and on teardown. An operator's network
	// runs as written (withoutPorts is netConf).
	withoutPorts *libcni.NetworkConfigList
	// loopback is only for tearing down pods set up before lo came up in
	// nspin.Pin: their loopback attachment is still in the CNI cache.
	loopback *libcni.PluginConfig
}

// New loads the first network config in cfg.ConfDir, writing the default one
// there if there is none.
func New(cfg Config) (*Manager, error) {
	if len(cfg.BinDirs) == 0 || cfg.ConfDir == "" || cfg.StateDir == "" {
		return nil, errors.New("network: BinDirs, ConfDir and StateDir are required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	loopback, err := libcni.NetworkPluginConfFromBytes(loopbackConf)
	if err != nil {
		return nil, fmt.Errorf("parse loopback config: %w", err)
	}
	m := &Manager{
		cni:      libcni.NewCNIConfigWithCacheDir(cfg.BinDirs, filepath.Join(cfg.StateDir, "cache"), nil),
		confDir:  cfg.ConfDir,
		ipamDir:  filepath.Join(cfg.StateDir, "networks"),
		log:      log,
		loopback: loopback,

		waitForPodCIDR: cfg.WaitForPodCIDR,
	}
	if err := m.load(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Manager) load() error {
	if err := os.MkdirAll(m.confDir, 0o755); err != nil {
		return fmt.Errorf("create CNI conf dir: %w", err)
	}
	files, err := libcni.ConfFiles(m.confDir, []string{".conflist", ".conf", ".json"})
	if err != nil {
		return fmt.Errorf("list CNI configs in %s: %w", m.confDir, err)
	}
	if len(files) == 0 && m.waitForPodCIDR {
		m.log.Info("no CNI network config yet: waiting for the node's pod CIDR", "dir", m.confDir)
		return nil
	}
	if len(files) == 0 {
		if err := m.writeDefault(DefaultSubnet); err != nil {
			return err
		}
		files = []string{filepath.Join(m.confDir, DefaultConfFile)}
	}
	conf, err := libcni.NetworkConfFromFile(files[0])
	if err != nil {
		return fmt.Errorf("load CNI config %s: %w", files[0], err)
	}
	withoutPorts := conf
	if filepath.Base(files[0]) == DefaultConfFile {
		withoutPorts = withoutPlugin(conf, "portmap")
	}
	m.mu.Lock()
	m.netConf, m.confPath, m.withoutPorts = conf, files[0], withoutPorts
	m.mu.Unlock()
	m.log.Info("CNI network loaded", "name", conf.Name, "file", files[0])
	return nil
}

func (m *Manager) writeDefault(subnet string) error {
	data, err := defaultConfList(subnet, m.ipamDir)
	if err != nil {
		return err
	}
	path := filepath.Join(m.confDir, DefaultConfFile)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil // the agent repeats the same CIDR after every restart
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write default CNI config: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("install default CNI config: %w", err)
	}
	return nil
}

// SetPodCIDR points the default network at cidr: host-local allocates from
// it from now on and the bridge's gateway becomes its first address. Pods
// already running keep their addresses. A config the operator wrote is
// theirs and is left alone.
func (m *Manager) SetPodCIDR(cidr string) error {
	m.mu.RLock()
	ours := m.confPath == "" || filepath.Base(m.confPath) == DefaultConfFile // nothing loaded yet: waiting for this
	m.mu.RUnlock()
	if !ours {
		m.log.Info("pod CIDR not applied: the CNI config is not berth's default", "cidr", cidr)
		return nil
	}
	if err := m.writeDefault(cidr); err != nil {
		return err
	}
	return m.load()
}

// Ready reports whether a usable network config is loaded and its plugins answer.
func (m *Manager) Ready(ctx context.Context) error {
	conf := m.current()
	if conf == nil && m.waitForPodCIDR {
		return errNoPodCIDR
	}
	if conf == nil {
		return errors.New("no CNI network config loaded")
	}
	for _, p := range conf.Plugins {
		if _, err := m.cni.GetVersionInfo(ctx, p.Network.Type); err != nil {
			return fmt.Errorf("CNI plugin %q: %w", p.Network.Type, err)
		}
	}
	return m.cni.GetStatusNetworkList(ctx, conf)
}

func (m *Manager) current() *libcni.NetworkConfigList {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.netConf
}

// listFor is the network list a pod is attached with. It depends only on
// the pod's own (immutable) config, so teardown runs the same plugins.
func (m *Manager) listFor(pod Pod) *libcni.NetworkConfigList {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(pod.Ports) == 0 {
		return m.withoutPorts
	}
	return m.netConf
}

// withoutPlugin is a copy of list without its plugins of type typ.
func withoutPlugin(list *libcni.NetworkConfigList, typ string) *libcni.NetworkConfigList {
	out := *list
	out.Plugins = nil
	for _, p := range list.Plugins {
		if p.Network.Type != typ {
			out.Plugins = append(out.Plugins, p)
		}
	}
	return &out
}

func runtimeConf(pod Pod) *libcni.RuntimeConf {
	ports := make([]map[string]any, 0, len(pod.Ports))
	for _, p := range pod.Ports {
		ports = append(ports, map[string]any{
			"hostPort": p.HostPort, "containerPort": p.ContainerPort,
			"protocol": p.Protocol, "hostIP": p.HostIP,
		})
	}
	return &libcni.RuntimeConf{
		ContainerID: pod.ID,
		NetNS:       pod.NetNS,
		IfName:      "eth0",
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", pod.Namespace},
			{"K8S_POD_NAME", pod.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", pod.ID},
			{"K8S_POD_UID", pod.UID},
		},
		CapabilityArgs: map[string]any{"portMappings": ports},
	}
}

// Setup attaches the pod's namespace, whose lo nspin.Pin brought up, to the
// network. On error whatever was attached is torn down again.
func (m *Manager) Setup(ctx context.Context, pod Pod) (Result, error) {
	conf := m.listFor(pod)
	if conf == nil {
		return Result{}, errNoPodCIDR
	}
	rt := runtimeConf(pod)
	res, err := m.cni.AddNetworkList(ctx, conf, rt)
	if err != nil {
		if delErr := m.Teardown(context.WithoutCancel(ctx), pod); delErr != nil {
			m.log.Warn("CNI cleanup after failed setup", "sandbox", pod.ID, "err", delErr)
		}
		return Result{}, fmt.Errorf("CNI network %q: %w", conf.Name, err)
	}
	cur, err := types100.NewResultFromResult(res)
	if err != nil {
		return Result{}, fmt.Errorf("CNI result: %w", err)
	}
	var out Result
	for _, ip := range cur.IPs {
		if ip == nil || ip.Address.IP == nil {
			// It would read as the pod IP "<nil>".
			return Result{}, fmt.Errorf("CNI network %q gave an IP entry without an address", conf.Name)
		}
		if out.IP == "" {
			out.IP = ip.Address.IP.String()
		} else {
			out.AdditionalIPs = append(out.AdditionalIPs, ip.Address.IP.String())
		}
	}
	if out.IP == "" {
		return out, fmt.Errorf("CNI network %q gave no IP", conf.Name)
	}
	return out, nil
}

// Teardown detaches the pod. It is safe to repeat and works when the
// namespace is already gone (plugins then release what they hold on the host).
func (m *Manager) Teardown(ctx context.Context, pod Pod) error {
	conf := m.listFor(pod)
	if conf == nil {
		return nil // no network was ever configured, so none was attached
	}
	rt := runtimeConf(pod)
	if err := m.cni.DelNetworkList(ctx, conf, rt); err != nil {
		return fmt.Errorf("CNI teardown of %q: %w", conf.Name, err)
	}
	if cached, _ := m.cni.GetNetworkCachedResult(m.loopback, rt); cached != nil {
		if err := m.cni.DelNetwork(ctx, m.loopback, rt); err != nil {
			m.log.Debug("CNI loopback teardown", "sandbox", pod.ID, "err", err)
		}
	}
	return nil
}
