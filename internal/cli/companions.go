package cli

import (
	"github.com/spf13/cobra"

	"github.com/berth/berth/internal/cli/companionexec"
	"github.com/berth/berth/internal/sibling"
)

// The subcommands that are executables of their own, beside berth: each
// links only its own packages (internal/cli/<name>cli), so a node agent,
// a CRI daemon or a kubectl command does not map and initialise the API
// server, etcd and the controllers (docs/architecture.md, Executables).
// `berth NAME ARGS` execs `berth-NAME NAME ARGS`: same PID, stdio, exit
// code and signals, and berth's own flags before NAME reach the companion.
// cmd/berth normally execs it earlier, from internal/cli/companionexec; these
// commands are the path that reports why it could not.

func newRuntimeCommand() *cobra.Command {
	return companionCommand("runtime",
		"Run the CRI v1 runtime service (runc through a monitor per container, CNI networking, image store)")
}

func newAgentCommand() *cobra.Command {
	return companionCommand("agent",
		"Run the node agent: register this node, run the pods bound to it through a CRI runtime, report their status")
}

func newKubectlCommand() *cobra.Command {
	cmd := companionCommand("kubectl",
		"Run the upstream kubectl, defaulting to berth's admin kubeconfig")
	cmd.Use = "kubectl [args...]"
	return cmd
}

// companionCommand is `berth name`, which execs its companion executable in
// its own place with the same arguments.
func companionCommand(name, short string) *cobra.Command {
	companion := companionexec.Companions[name]
	return &cobra.Command{
		Use:   name,
		Short: short,
		Long: short + ".\nIt is the " + companion + " executable beside berth; `berth " + name +
			" --help` is its help.",
		// The companion parses them: it has this command's flags.
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			return sibling.Exec(companion, append([]string{name}, args...))
		},
	}
}
