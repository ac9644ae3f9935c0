package cli

import (
	"github.com/spf13/cobra"

	"github.com/berth/berth/internal/sibling"
)

// The subcommands that are executables of their own, beside berth: each
// links only its own packages (internal/cli/<name>cli), so a node agent,
// a CRI daemon or a kubectl command does not map and initialise the API
// server, etcd and the controllers (docs/architecture.md, Executables).
// `berth NAME ARGS` execs `berth-NAME NAME ARGS`: same PID, stdio, exit
// code and signals, and berth's own flags before NAME reach the companion.

func newRuntimeCommand() *cobra.Command {
	return companionCommand("runtime", "berth-runtime",
		"Run the CRI v1 runtime service (runc through a monitor per container, CNI networking, image store)")
}

func newAgentCommand() *cobra.Command {
	return companionCommand("agent", "berth-agent",
		"Run the node agent: register this node, run the pods bound to it through a CRI runtime, report their status")
}

func newKubectlCommand() *cobra.Command {
	cmd := companionCommand("kubectl", "berth-kubectl",
		"Run the upstream kubectl, defaulting to berth's admin kubeconfig")
	cmd.Use = "kubectl [args...]"
	return cmd
}

// companionCommand is `berth name`, which execs the executable companion in
// its own place with the same arguments.
func companionCommand(name, companion, short string) *cobra.Command {
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
