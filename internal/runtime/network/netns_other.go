//go:build !linux

package network

import "errors"

// Network namespaces exist only on Linux; elsewhere berth runtime cannot run
// pods, but the packages that link this one still build.
var errNoNetNS = errors.New("network namespaces need Linux")

func NewNetNS(dir, name string) (string, error)    { return "", errNoNetNS }
func RemoveNetNS(path string) error                { return nil }
func WithNetNS(path string, fn func() error) error { return errNoNetNS }
