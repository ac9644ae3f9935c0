// Package dirperm keeps directories passable by other users where a
// user-namespaced container's root (an unprivileged host user of its pod's
// range) must reach files below them: its root filesystem, its pod's
// hosts and resolv.conf, the runtime's idmapped clones of its volumes.
// Passing through is all it needs; listing, and every file's own mode,
// stay as they are.
package dirperm

import (
	"fmt"
	"os"
	"path/filepath"
)

// search is the execute bits of group and others: the right to pass.
const search = 0o011

// MakeTraversable creates each directory (and missing parents) as 0711, or
// adds the search bits to one that exists, changing nothing else.
func MakeTraversable(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if mode := fi.Mode().Perm(); mode&search != search {
			if err := os.Chmod(d, mode|search); err != nil {
				return fmt.Errorf("let others pass through %s: %w", d, err)
			}
		}
	}
	return nil
}

// Blocking is the first of path and its parents, from the root down, that
// others may not pass through ("" if none): a user-namespaced container's
// root could not reach path.
func Blocking(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	var chain []string
	for p := abs; ; p = filepath.Dir(p) {
		chain = append(chain, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		fi, err := os.Stat(chain[i])
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return chain[i]
		}
	}
	return ""
}
