// Package cli assembles berth's cobra command tree. Each subcommand lives in
// its own file and only parses flags and hands over to its component package,
// so the architecture stays visible in internal/<component>. The agent,
// runtime and kubectl are executables of their own (companions.go).
package cli

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/berth/berth/internal/cli/clibase"
)

// The command-line contract's defaults, named here for the subcommands' flags.
const (
	DefaultDataDir   = clibase.DefaultDataDir
	DefaultSocketDir = clibase.DefaultSocketDir
	DefaultAPIPort   = clibase.DefaultAPIPort
)

// Execute runs berth with args and returns the process exit code.
func Execute(args []string) int {
	return clibase.Execute(NewRootCommand(os.Stdout, os.Stderr), args)
}

// NewRootCommand builds the command tree writing to out and errOut.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
	root := clibase.NewRoot(out, errOut)
	root.AddCommand(
		newVersionCommand(),
		newServerCommand(),
		newKubectlCommand(),
		newRuntimeCommand(),
		newAgentCommand(),
		newTokenCommand(),
		newImageCommand(),
		newSnapshotCommand(),
	)
	return root
}
