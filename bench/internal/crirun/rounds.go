package crirun

import (
	"errors"
	"os"
)

// Kinds are the runtimes the CRI benchmarks compare, in report order.
var Kinds = []string{"berth", "containerd"}

// RoundOrder is the order in which the runtimes run in round r (from 0):
// which one goes first alternates, so neither always meets a machine warmed
// (or loaded) by the other.
func RoundOrder(r int) []string {
	if r%2 == 1 {
		return []string{Kinds[1], Kinds[0]}
	}
	return Kinds
}

// RequireRoot fails unless the bench runs as root, which the runtimes it
// starts need (namespaces, mounts, runc).
func RequireRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("must run as root (namespaces, mounts, runc)")
	}
	return nil
}
