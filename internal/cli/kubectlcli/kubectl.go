// Package kubectlcli is `berth kubectl`: the upstream kubectl, embedded
// unchanged. berth-kubectl (cmd/berth-kubectl) is built from it alone, and
// `berth kubectl` execs that binary (internal/cli), so a kubectl process
// carries none of the API server's, etcd's or the agent's packages.
package kubectlcli

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"

	"github.com/berth/berth/internal/cli/clibase"
)

// Execute runs `berth ARGS` with `kubectl` as the only subcommand and
// returns the process exit code.
func Execute(args []string) int { return clibase.ExecuteCompanion(NewCommand(), args) }

// NewCommand embeds the upstream kubectl unchanged. Only the default
// kubeconfig differs: the server's admin kubeconfig, when readable and
// KUBECONFIG is unset.
func NewCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "kubectl [args...]",
		Short:              "Run the upstream kubectl, defaulting to berth's admin kubeconfig",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if os.Getenv("KUBECONFIG") == "" {
				admin := filepath.Join(clibase.DataDirFromEnv(), "admin.kubeconfig")
				if f, err := os.Open(admin); err == nil {
					f.Close()
					os.Setenv("KUBECONFIG", admin)
				}
			}
			kubectl := kubectlcmd.NewDefaultKubectlCommandWithArgs(kubectlcmd.KubectlOptions{
				PluginHandler: kubectlcmd.NewDefaultPluginHandler([]string{"kubectl"}),
				Arguments:     append([]string{"kubectl"}, args...),
				ConfigFlags:   genericclioptions.NewConfigFlags(true).WithDiscoveryBurst(300).WithDiscoveryQPS(50.0),
				IOStreams:     genericiooptions.IOStreams{In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr()},
			})
			kubectl.SetArgs(args)
			// kubectl reports its own errors and exits through cmdutil.CheckErr.
			return kubectl.ExecuteContext(cmd.Context())
		},
	}
}
