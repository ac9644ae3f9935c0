//go:build !linux

package pause

import (
	"errors"
	"os/exec"
)

// Namespaces and cgroups exist only on Linux; elsewhere no pod runs, but
// the packages that link this one still build.
var errNoPause = errors.New("pause: needs Linux")

func confine() error                         { return errNoPause }
func command(Process) *exec.Cmd              { return nil }
func createCgroups(string) ([]string, error) { return nil, errNoPause }
func place(int, []string, int) error         { return errNoPause }
func removeCgroups([]string) error           { return nil }
func RemoveCgroups(cgroupsPath string) error { return nil }
func KillCgroups(cgroupsPath string) error   { return errNoPause }
