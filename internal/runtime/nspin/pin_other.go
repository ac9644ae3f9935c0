//go:build !linux

package nspin

import "errors"

// Namespaces exist only on Linux; elsewhere berth runtime cannot run pods,
// but the packages that link this one still build.
var errNoNamespaces = errors.New("nspin: namespaces need Linux")

func Pin(paths map[Type]string, hostname string) error { return errNoNamespaces }
func Unpin(path string) error                          { return nil }
func IsPinned(path string) bool                        { return false }
func Enter(path string, t Type, fn func() error) error { return errNoNamespaces }
func EnterAll(paths map[Type]string, fn func() error) error {
	return errNoNamespaces
}
func PinProcess(pid int, paths map[Type]string) error { return errNoNamespaces }
func Configure(net, uts, hostname string) error       { return errNoNamespaces }
