// Package node registers the agent's Node object, keeps its status current
// (capacity, allocatable, addresses, nodeInfo, pressure and Ready
// conditions) and renews its Lease in kube-node-lease.
package node

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Facts is what the agent reads about its machine. Gathering is separate from
// building the Node so the logic is tested with made-up machines.
type Facts struct {
	CPUs            int
	MemoryBytes     int64 // MemTotal
	MemoryAvailable int64 // MemAvailable
	DiskBytes       int64 // size of the filesystem holding the data dir
	DiskAvailable   int64
	PIDMax          int64
	PIDsInUse       int64
	KernelVersion   string
	OSImage         string
	Architecture    string
	OperatingSystem string
	MachineID       string
	BootID          string
	Hostname        string
	InternalIP      string
}

// Gather reads Facts from the running Linux host; dataDir is the filesystem
// whose size is the node's ephemeral storage.
func Gather(dataDir string) (Facts, error) {
	f := Facts{CPUs: goruntime.NumCPU(), Architecture: goruntime.GOARCH, OperatingSystem: goruntime.GOOS}
	if err := readMeminfo(&f); err != nil {
		return f, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dataDir, &st); err != nil {
		return f, fmt.Errorf("statfs %s: %w", dataDir, err)
	}
	f.DiskBytes = int64(st.Blocks) * st.Bsize
	f.DiskAvailable = int64(st.Bavail) * st.Bsize
	var uts syscall.Utsname
	if err := syscall.Uname(&uts); err != nil {
		return f, fmt.Errorf("uname: %w", err)
	}
	f.KernelVersion = utsString(uts.Release[:])
	f.OSImage = osImage()
	f.MachineID = readTrimmed("/etc/machine-id")
	f.BootID = readTrimmed("/proc/sys/kernel/random/boot_id")
	f.PIDMax, _ = strconv.ParseInt(readTrimmed("/proc/sys/kernel/pid_max"), 10, 64)
	f.PIDsInUse = countPIDs()
	f.Hostname, _ = os.Hostname()
	f.InternalIP = firstGlobalIPv4()
	return f, nil
}

func readMeminfo(f *Facts) error {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return fmt.Errorf("read meminfo: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "MemTotal:":
			f.MemoryBytes = kb * 1024
		case "MemAvailable:":
			f.MemoryAvailable = kb * 1024
		}
	}
	if f.MemoryBytes == 0 {
		return fmt.Errorf("read meminfo: no MemTotal")
	}
	return nil
}

func utsString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

func osImage() string {
	data, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "Linux"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}

func readTrimmed(path string) string {
	data, _ := os.ReadFile(path)
	return strings.TrimSpace(string(data))
}

func countPIDs() int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return n
}

// firstGlobalIPv4 returns the host's first non-loopback IPv4 address, the
// address the kubelet reports as InternalIP when none is configured.
func firstGlobalIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
			return ipn.IP.String()
		}
	}
	return ""
}

// Capacity is the machine's resources as the Node reports them (pods fixed
// at the kubelet's default of 110).
func (f Facts) Capacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(f.CPUs), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(f.MemoryBytes, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(f.DiskBytes, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(MaxPods, resource.DecimalSI),
	}
}

// MaxPods is the kubelet's default pod capacity.
const MaxPods = 110
