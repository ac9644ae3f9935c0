// Package companionexec execs the companion executable of `berth agent`,
// `berth kubectl` and `berth runtime` while berth is still initialising,
// before the server's packages do.
//
// Go initialises every package a binary links before main runs: in berth
// that is the API server's, the controllers' and etcd's, tens of megabytes
// that a process which only execs berth-kubectl would allocate first (and
// that the kubectl command's peak RSS would show). Since Go 1.21 packages
// initialise in import path order as soon as their imports have: this one
// imports only the standard library and internal/sibling, so it runs after
// them and before every k8s.io, go.etcd.io and github.com/berth/berth
// package with Kubernetes imports. internal/cli's commands exec the same
// companions when this package has not (berth-NAME missing, or arguments
// it does not recognise), and report the error.
package companionexec

import (
	"os"

	"github.com/berth/berth/internal/sibling"
)

// Companions maps each berth subcommand that is an executable of its own to
// that executable's name.
var Companions = map[string]string{
	"agent":   "berth-agent",
	"kubectl": "berth-kubectl",
	"runtime": "berth-runtime",
}

func init() {
	name, ok := subcommand(os.Args[1:])
	if !ok {
		return
	}
	companion, ok := Companions[name]
	if !ok {
		return
	}
	// berth-NAME takes berth's own arguments; on failure internal/cli's
	// command tries again and reports why.
	_ = sibling.Exec(companion, os.Args[1:])
}

// subcommand is the subcommand args name, after berth's own flags (only
// --log-level: anything else is left to the command tree to parse).
func subcommand(args []string) (string, bool) {
	for i := 0; i < len(args); i++ {
		switch arg := args[i]; {
		case arg == "--log-level":
			i++ // its value
		case len(arg) > len("--log-level=") && arg[:len("--log-level=")] == "--log-level=":
		case len(arg) > 0 && arg[0] == '-':
			return "", false
		default:
			return arg, true
		}
	}
	return "", false
}
