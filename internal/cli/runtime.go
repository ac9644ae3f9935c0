package cli

import (
	"fmt"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/berth/berth/internal/sibling"
)

// newRuntimeCommand is `berth runtime`, the CRI v1 runtime service. It
// execs berth-runtime (built beside berth from internal/cli/runtimecli) in
// its own place, with the same arguments: the daemon keeps this process's
// PID, but not the multicall binary's package state and code pages, which
// would double its memory (docs/architecture.md).
func newRuntimeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "runtime",
		Short: "Run the CRI v1 runtime service (runc through a monitor per container, CNI networking, image store)",
		Long: "Run the CRI v1 runtime service (runc through a monitor per container, CNI networking, image store).\n" +
			"It is the berth-runtime executable beside berth; `berth runtime --help` lists its flags.",
		// berth-runtime parses them: it has this command's flags.
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			bin, err := sibling.Find("berth-runtime")
			if err != nil {
				return err
			}
			argv := append([]string{bin, "runtime"}, args...)
			if err := syscall.Exec(bin, argv, os.Environ()); err != nil {
				return fmt.Errorf("exec %s: %w", bin, err)
			}
			return nil // not reached: Exec returns only on failure
		},
	}
}
