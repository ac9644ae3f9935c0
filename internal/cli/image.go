package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/cri"
	"github.com/berth/berth/internal/runtime/imageimport"
)

// newImageCommand is `berth image`: work on the local runtime's image store.
func newImageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Manage images in the local berth runtime",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newImageImportCommand())
	return cmd
}

// newImageImportCommand loads image archives through the runtime's socket,
// so the runtime's store stays the one writer of its own files.
func newImageImportCommand() *cobra.Command {
	var endpoint string
	cmd := &cobra.Command{
		Use:   "import FILE.tar...",
		Short: "Load OCI-layout or docker-save archives into the runtime's image store ('-' reads stdin)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			client, _, err := cri.Dial(cmd.Context(), endpoint)
			if err != nil {
				return err
			}
			defer client.Close()
			for _, file := range files {
				if err := importArchive(cmd.Context(), client, file, cmd.InOrStdin(), cmd.OutOrStdout()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&endpoint, "runtime-endpoint", "unix://"+filepath.Join(DefaultSocketDir, "runtime.sock"), "berth runtime's CRI endpoint")
	return cmd
}

// importArchive sends one archive and prints each image it held with its names.
func importArchive(ctx context.Context, client *cri.Client, file string, stdin io.Reader, out io.Writer) error {
	archive := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		archive = f
	}
	ids, err := imageimport.Import(ctx, client.Conn(), archive)
	if err != nil {
		return fmt.Errorf("import %s: %w", file, err)
	}
	for _, id := range ids {
		names := "<none>"
		st, err := client.Images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: id}})
		if err == nil && st.GetImage() != nil && len(st.GetImage().GetRepoTags()) > 0 {
			names = strings.Join(st.GetImage().GetRepoTags(), ",")
		}
		fmt.Fprintf(out, "imported %s %s\n", names, id)
	}
	return nil
}
