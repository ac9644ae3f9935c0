package spec

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// setDevices adds the CRI's devices (a device node, or a directory of them)
// and allows them in the devices cgroup; a privileged container gets every
// host device.
func setDevices(s *specs.Spec, devices []*runtimeapi.Device, privileged bool) error {
	if privileged {
		host, err := hostDevices("/dev")
		if err != nil {
			return invalid("list host devices: %v", err)
		}
		s.Linux.Devices = host
		s.Linux.Resources.Devices = []specs.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}}
	}
	for _, d := range devices {
		perms := d.GetPermissions()
		if perms == "" {
			perms = "rwm"
		}
		if strings.Trim(perms, "rwm") != "" {
			return invalid("device %q: invalid permissions %q", d.GetHostPath(), perms)
		}
		src, dst := d.GetHostPath(), d.GetContainerPath()
		if !filepath.IsAbs(src) || !filepath.IsAbs(dst) || strings.ContainsRune(src+dst, 0) {
			return invalid("device %q -> %q: both paths must be absolute", src, dst)
		}
		found, err := devicesAt(src)
		if err != nil {
			return invalid("device %q: %v", src, err)
		}
		for _, dev := range found {
			// A directory maps each node beneath it to the same relative path.
			rel, _ := filepath.Rel(src, dev.Path)
			dev.Path = filepath.Join(dst, rel)
			s.Linux.Devices = append(s.Linux.Devices, dev)
			major, minor := dev.Major, dev.Minor
			s.Linux.Resources.Devices = append(s.Linux.Resources.Devices, specs.LinuxDeviceCgroup{
				Allow: true, Type: dev.Type, Major: &major, Minor: &minor, Access: perms,
			})
		}
	}
	return nil
}

// devicesAt returns the device node at path, or every one under a directory.
func devicesAt(path string) ([]specs.LinuxDevice, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		d, err := deviceFromPath(path)
		if err != nil {
			return nil, err
		}
		return []specs.LinuxDevice{d}, nil
	}
	return hostDevices(path)
}

// hostDevices lists the device nodes under dir, skipping pseudo-terminals
// and anything that is not a device.
func hostDevices(dir string) ([]specs.LinuxDevice, error) {
	var out []specs.LinuxDevice
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() {
			switch filepath.Base(p) {
			case "pts", "shm", "fd", "mqueue":
				if p != dir {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if p == "/dev/console" || p == "/dev/ptmx" {
			return nil
		}
		d, err := deviceFromPath(p)
		if err != nil {
			return nil // not a device node
		}
		out = append(out, d)
		return nil
	})
	return out, err
}

func deviceFromPath(p string) (specs.LinuxDevice, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return specs.LinuxDevice{}, err
	}
	var typ string
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		typ = "c"
	case unix.S_IFBLK:
		typ = "b"
	default:
		return specs.LinuxDevice{}, errors.New("not a device node")
	}
	mode := os.FileMode(st.Mode & 0o777)
	uid, gid := st.Uid, st.Gid
	return specs.LinuxDevice{
		Path:     p,
		Type:     typ,
		Major:    int64(unix.Major(uint64(st.Rdev))),
		Minor:    int64(unix.Minor(uint64(st.Rdev))),
		FileMode: &mode,
		UID:      &uid,
		GID:      &gid,
	}, nil
}
