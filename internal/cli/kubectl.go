package cli

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
)

// newKubectlCommand embeds the upstream kubectl unchanged. Only the default
// kubeconfig differs: the server's admin kubeconfig, when readable and
// KUBECONFIG is unset.
func newKubectlCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "kubectl [args...]",
		Short:              "Run the upstream kubectl, defaulting to berth's admin kubeconfig",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if os.Getenv("KUBECONFIG") == "" {
				admin := filepath.Join(dataDirFromEnv(), "admin.kubeconfig")
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

// dataDirFromEnv lets a user with a non-default --data-dir point berth
// kubectl at it without a kubeconfig flag.
func dataDirFromEnv() string {
	if d := os.Getenv("BERTH_DATA_DIR"); d != "" {
		return d
	}
	return DefaultDataDir
}
