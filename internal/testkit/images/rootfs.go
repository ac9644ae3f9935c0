package images

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
)

// Upstream busybox's /etc/passwd and /etc/group, which critest's
// user/group specs rely on (nobody 65534, www-data 33, ...).
const (
	passwd = `root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
`
	group = `root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
lp:x:7:
mail:x:8:
kmem:x:9:
wheel:x:10:root
cdrom:x:11:
dialout:x:18:
floppy:x:19:
video:x:28:
audio:x:29:
tape:x:32:
www-data:x:33:
operator:x:37:
utmp:x:43:
plugdev:x:46:
staff:x:50:
lock:x:54:
netdev:x:82:
users:x:100:
nogroup:x:65534:
`
	nsswitch = "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
)

// baseDirs are the directories every busybox-based image has.
var baseDirs = []Entry{
	Dir("/bin", 0o755), Dir("/dev", 0o755), Dir("/etc", 0o755), Dir("/home", 0o755),
	Dir("/proc", 0o555), Dir("/root", 0o700), Dir("/sys", 0o555), Dir("/tmp", 0o1777),
	Dir("/usr", 0o755), Dir("/usr/bin", 0o755), Dir("/usr/sbin", 0o755),
	Dir("/usr/local", 0o755), Dir("/usr/local/bin", 0o755),
	Dir("/var", 0o755), Dir("/var/run", 0o755), Dir("/var/www", 0o755),
}

// hostFile is a file copied from the host into an image at the same path.
type hostFile struct {
	path string
	data []byte
}

// busyboxRoot is the single layer of a busybox image: binary at
// /bin/busybox, every applet a hard link to it in /bin (so exec of /bin/ls
// really execs, and masking one path masks only that name), extra files
// (shared libraries, helper programs) and upstream busybox's /etc files.
func busyboxRoot(binary []byte, applets []string, extra []hostFile) []Entry {
	entries := append([]Entry(nil), baseDirs...)
	have := map[string]bool{}
	for _, d := range baseDirs {
		have[path.Clean(d.Header.Name)] = true
	}
	var extraPaths []string
	for _, f := range extra {
		extraPaths = append(extraPaths, f.path)
	}
	for _, d := range parentDirs(extraPaths, have) {
		entries = append(entries, Dir(d, 0o755))
	}
	entries = append(entries,
		File("/bin/busybox", 0o755, binary),
		File("/etc/passwd", 0o644, []byte(passwd)),
		File("/etc/group", 0o644, []byte(group)),
		File("/etc/nsswitch.conf", 0o644, []byte(nsswitch)),
	)
	taken := map[string]bool{}
	for _, f := range extra {
		taken[f.path] = true
		entries = append(entries, File(f.path, 0o755, f.data))
	}
	for _, a := range applets {
		if p := "/bin/" + a; !taken[p] {
			entries = append(entries, HardLink(p, "/bin/busybox"))
		}
	}
	return entries
}

// appletList asks a busybox binary which applets it has.
func appletList(ctx context.Context, busybox string) ([]string, error) {
	out, err := exec.CommandContext(ctx, busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busybox, err)
	}
	var applets []string
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" && !strings.Contains(a, "/") {
			applets = append(applets, a)
		}
	}
	sort.Strings(applets)
	return applets, nil
}

// libDirs are where the host's dynamic loader finds libraries (Debian amd64).
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/lib", "/usr/lib"}

// sharedLibs returns the program interpreter and the shared libraries a
// dynamically linked executable needs, read from the host at the paths the
// loader would use, so the image runs the binary exactly as the host does.
func sharedLibs(binary []byte) ([]hostFile, error) {
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return nil, fmt.Errorf("read ELF: %w", err)
	}
	defer f.Close()
	var files []hostFile
	seen := map[string]bool{}
	add := func(p string) error {
		if seen[p] {
			return nil
		}
		seen[p] = true
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("copy shared library: %w", err)
		}
		files = append(files, hostFile{path: p, data: data})
		return nil
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return nil, fmt.Errorf("read interpreter: %w", err)
		}
		if err := add(strings.TrimRight(string(b), "\x00")); err != nil {
			return nil, err
		}
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("read needed libraries: %w", err)
	}
	for _, lib := range needed {
		found := ""
		for _, d := range libDirs {
			if _, err := os.Stat(path.Join(d, lib)); err == nil {
				found = path.Join(d, lib)
				break
			}
		}
		if found == "" {
			return nil, fmt.Errorf("shared library %s not found in %v", lib, libDirs)
		}
		if err := add(found); err != nil {
			return nil, err
		}
	}
	return files, nil
}
