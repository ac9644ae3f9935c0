package hostcheck

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// BusyboxPath is where Debian's busybox-static installs its binary.
const BusyboxPath = "/bin/busybox"

// busyboxAshTool is the tools dir's static ash (hack/build-busybox-ash.sh).
const busyboxAshTool = "busybox-ash"

// CNIPluginNames are the plugins berth's default network configuration uses.
var cniPluginNames = []string{"bridge", "host-local", "loopback", "portmap"}

var (
	// Root: the test process runs as uid 0 (namespaces, mounts, runc).
	Root = Requirement{Name: "root", Install: "run the tests as root", check: checkRoot}
	// Runc: runc on PATH or at /usr/sbin/runc.
	Runc = Requirement{Name: "runc", Install: "apt-get install runc", check: checkRunc}
	// CNIPlugins: bridge, host-local, loopback and portmap in /usr/lib/cni or $BERTH_CNI_BIN_DIR.
	CNIPlugins = Requirement{Name: "cni-plugins", Install: "apt-get install containernetworking-plugins", check: checkCNIPlugins}
	// BusyboxStatic: a statically linked /bin/busybox, the base of the test images.
	BusyboxStatic = Requirement{Name: "busybox-static", Install: "apt-get install busybox-static", check: checkBusyboxStatic}
	// BusyboxAsh: upstream busybox's ash, static, in the tools dir: the conformance images' /bin/sh.
	BusyboxAsh = Requirement{Name: "busybox-ash", Install: "hack/setup.sh (hack/build-busybox-ash.sh)", check: checkBusyboxAsh}
	// Containerd: the upstream CRI runtime berth is compared and tested against.
	Containerd = Requirement{Name: "containerd", Install: "apt-get install containerd", check: lookPath("containerd")}
	// Overlayfs: the kernel offers the overlay filesystem.
	Overlayfs = Requirement{Name: "overlayfs", Install: "modprobe overlay (a kernel with CONFIG_OVERLAY_FS)", check: checkOverlayfs}
	// Gcc: gcc with a static libc, used to build the test images' tiny C programs (pause, nginx, ...).
	Gcc = Requirement{Name: "gcc", Install: "apt-get install gcc libc6-dev", check: checkGcc}
	// IPRoute2: `ip` (network namespaces, veths, bridges, routes).
	IPRoute2 = Requirement{Name: "iproute2", Install: "apt-get install iproute2", check: lookPath("ip")}
	// Nft: the nft command, which kube-proxy's nftables proxier runs.
	Nft = Requirement{Name: "nft", Install: "apt-get install nftables", check: lookPath("nft")}
	// Nsenter: util-linux's nsenter, to start a process in another network namespace only.
	Nsenter = Requirement{Name: "nsenter", Install: "apt-get install util-linux", check: lookPath("nsenter")}
	// Crictl: crictl in the tools dir ($BERTH_TOOLS_DIR or _output/tools).
	Crictl = Requirement{Name: "crictl", Install: "hack/setup.sh (go install sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0)", check: tool("crictl")}
	// Critest: critest in the tools dir ($BERTH_TOOLS_DIR or _output/tools).
	Critest = Requirement{Name: "critest", Install: "hack/setup.sh (go test -c ./cmd/critest in sigs.k8s.io/cri-tools@v1.37.0)", check: tool("critest")}
)

func checkRoot(h Host) error {
	if uid := h.Geteuid(); uid != 0 {
		return fmt.Errorf("running as uid %d, not root", uid)
	}
	return nil
}

func checkRunc(h Host) error {
	_, err := runcPath(h)
	return err
}

func checkCNIPlugins(h Host) error {
	dir := cniBinDir(h)
	var missing []string
	for _, name := range cniPluginNames {
		if err := isExecutable(h, filepath.Join(dir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing in %s: %s", dir, strings.Join(missing, ", "))
	}
	return nil
}

func checkBusyboxStatic(h Host) error {
	return checkStatic(h, BusyboxPath, "the busybox package, not busybox-static")
}

func checkBusyboxAsh(h Host) error {
	p, err := busyboxAshPath(h)
	if err != nil {
		return err
	}
	return checkStatic(h, p, "build it with hack/build-busybox-ash.sh")
}

// BusyboxAshPath is where BusyboxAsh is: <tools dir>/busybox-ash.
func BusyboxAshPath() (string, error) { return busyboxAshPath(OS()) }

func busyboxAshPath(h Host) (string, error) {
	dir, err := toolsDir(h)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, busyboxAshTool), nil
}

// checkStatic requires p to be a statically linked ELF executable; hint
// says what to install instead of a dynamic one.
func checkStatic(h Host, p, hint string) error {
	if err := isExecutable(h, p); err != nil {
		return err
	}
	data, err := h.ReadFile(p)
	if err != nil {
		return err
	}
	static, err := isStaticELF(data)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if !static {
		return fmt.Errorf("%s is dynamically linked (%s)", p, hint)
	}
	return nil
}

// isStaticELF reports whether an ELF executable needs no program interpreter.
func isStaticELF(data []byte) (bool, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return false, fmt.Errorf("not an ELF file: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

func checkOverlayfs(h Host) error {
	data, err := h.ReadFile("/proc/filesystems")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 && fields[len(fields)-1] == "overlay" {
			return nil
		}
	}
	return errors.New("overlay not listed in /proc/filesystems")
}

func checkGcc(h Host) error {
	if _, err := h.LookPath("gcc"); err != nil {
		return err
	}
	libs, err := h.Glob("/usr/lib/*/libc.a")
	if err != nil {
		return err
	}
	if len(libs) == 0 {
		return errors.New("no static libc (libc.a) for gcc -static")
	}
	return nil
}

func lookPath(name string) func(Host) error {
	return func(h Host) error {
		_, err := h.LookPath(name)
		return err
	}
}

func tool(name string) func(Host) error {
	return func(h Host) error {
		dir, err := toolsDir(h)
		if err != nil {
			return err
		}
		return isExecutable(h, filepath.Join(dir, name))
	}
}
