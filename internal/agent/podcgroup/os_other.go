//go:build !linux

package podcgroup

// HostOS has no cgroups off Linux.
type HostOS struct{}

func (HostOS) Hierarchies() ([]string, error)       { return nil, nil }
func (HostOS) SubDirs(dir string) ([]string, error) { return nil, nil }
func (HostOS) Rmdir(dir string) error               { return nil }
