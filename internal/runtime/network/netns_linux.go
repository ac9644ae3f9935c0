package network

import (
	"fmt"
	"path/filepath"

	"github.com/berth/berth/internal/runtime/nspin"
)

// NewNetNS creates a network namespace and pins it on dir/name (see
// nspin), so it outlives every process in it: the pod's containers come and
// go, the runtime restarts.
func NewNetNS(dir, name string) (string, error) {
	if name == "" || filepath.Base(name) != name {
		return "", fmt.Errorf("invalid network namespace name %q", name)
	}
	path := filepath.Join(dir, name)
	if err := nspin.Pin(map[nspin.Type]string{nspin.Net: path}, ""); err != nil {
		return "", err
	}
	return path, nil
}

// RemoveNetNS unmounts and deletes a namespace made by NewNetNS. A path that
// is already gone is not an error, so teardown can be retried.
func RemoveNetNS(path string) error { return nspin.Unpin(path) }

// WithNetNS runs fn on an OS thread that has entered the network namespace
// at path (see nspin.Enter).
func WithNetNS(path string, fn func() error) error { return nspin.Enter(path, nspin.Net, fn) }
