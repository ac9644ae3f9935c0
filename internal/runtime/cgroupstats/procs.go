package cgroupstats

import (
	"os"
	"path/filepath"
	"strings"
)

// readProcs counts the processes listed in procsFile, their threads, open
// descriptors and sockets. Processes that exit meanwhile are skipped.
func (r *Reader) readProcs(procsFile string) Procs {
	var p Procs
	if procsFile == "" {
		return p
	}
	b, err := os.ReadFile(procsFile)
	if err != nil {
		return p
	}
	for _, pid := range strings.Fields(string(b)) {
		dir := filepath.Join(r.Proc, pid)
		tasks, err := os.ReadDir(filepath.Join(dir, "task"))
		if err != nil {
			continue
		}
		p.Processes++
		p.Threads += uint64(len(tasks))
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue
		}
		p.FileDescriptors += uint64(len(fds))
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil && strings.HasPrefix(target, "socket:") {
				p.Sockets++
			}
		}
	}
	return p
}
