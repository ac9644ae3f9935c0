// Package nspin creates Linux namespaces that outlive every process in them
// by bind-mounting each onto a file ("pinning" it), as CRI-O's pinns helper
// and `ip netns add` do. The runtime pins a pod's network namespace for CNI,
// and its UTS and IPC namespaces: containers (and the pod's pause process,
// if it has one) join the pinned files.
package nspin

import "fmt"

// Type is a kind of namespace, named as in /proc/PID/ns.
type Type string

// The namespace types a pod's sandbox may pin. Pin and EnterAll take Net,
// UTS and IPC; a user namespace (User) can only be created by a new process
// (a multithreaded one may neither unshare nor join one), so it is pinned
// from such a process with PinProcess.
const (
	Net  Type = "net"
	UTS  Type = "uts"
	IPC  Type = "ipc"
	User Type = "user"
)

// Types lists every type Pin accepts, in the order it mounts them.
func Types() []Type { return []Type{Net, UTS, IPC} }

// allTypes is every type a pin may hold, User first (PinProcess's order).
func allTypes() []Type { return append([]Type{User}, Types()...) }

func (t Type) valid() error {
	switch t {
	case Net, UTS, IPC:
		return nil
	}
	return fmt.Errorf("nspin: unsupported namespace type %q", string(t))
}
