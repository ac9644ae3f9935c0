package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/berth/berth/internal/version"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print berth's version, git commit, and the Kubernetes API and CRI versions it speaks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), version.Get().String())
			return err
		},
	}
}
