//go:build !linux

package oci

import "os"

// reapOnExit reaps p once it has exited.
func reapOnExit(p *os.Process) { go func() { _, _ = p.Wait() }() }
