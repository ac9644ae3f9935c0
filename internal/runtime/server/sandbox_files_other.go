//go:build !linux

package server

import "errors"

// Pods run only on Linux; these keep the package building elsewhere.
var errNotLinux = errors.New("pod sandboxes need Linux")

type sandboxFiles struct{ Hostname, Hosts, ResolvConf, Shm string }

func writeSandboxFiles(dir string, cfg *PodSandboxConfig) (sandboxFiles, error) {
	return sandboxFiles{}, errNotLinux
}
func addHostsEntry(path, ip, hostname string) error { return errNotLinux }
func removeSandboxFiles(dir string) error           { return nil }
