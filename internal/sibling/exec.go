package sibling

import (
	"fmt"
	"os"
	"syscall"
)

// Exec replaces the running process with the companion name (found as
// Find does), run with argv[0] its path and then args, and the same
// environment. The process keeps its PID, stdio and signal disposition, so
// callers, supervisors and shells see the companion as the command they
// started; its exit code is theirs. It returns only on failure.
func Exec(name string, args []string) error {
	bin, err := Find(name)
	if err != nil {
		return err
	}
	argv := append([]string{bin}, args...)
	if err := syscall.Exec(bin, argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", bin, err)
	}
	return nil // not reached: Exec returns only on failure
}
