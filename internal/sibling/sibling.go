// Package sibling finds and execs berth's companion executables
// (berth-agent, berth-kubectl, berth-runtime, berth-monitor): hack/build.sh
// builds them into one directory, and an installation copies them together,
// so the one beside the running executable belongs to the same build; PATH
// is the fallback.
package sibling

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Find returns the path of the executable name: beside the running
// executable if it is there, else the first one on PATH.
func Find(name string) (string, error) {
	self, err := os.Executable()
	if err == nil {
		near := filepath.Join(filepath.Dir(self), name)
		if st, err := os.Stat(near); err == nil && st.Mode().IsRegular() {
			return near, nil
		}
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("no %s beside %s nor on PATH (hack/build.sh builds berth's executables side by side): %w", name, self, err)
	}
	return bin, nil
}
