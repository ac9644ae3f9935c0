package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/cli/clibase"
	"github.com/berth/berth/internal/store/etcd"
)

// newSnapshotCommand is `berth snapshot`: back up and restore the store.
func newSnapshotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Back up the cluster's store (an etcd snapshot) and restore it",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newSnapshotSaveCommand(), newSnapshotRestoreCommand())
	return cmd
}

func newSnapshotSaveCommand() *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "save FILE",
		Short: "Save a snapshot of the running server's store to FILE (needs an admin kubeconfig)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
			}
			info, err := saveSnapshot(cmd.Context(), cfg, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "saved %s: revision %d, %d keys, %d bytes\n", args[0], info.Revision, info.TotalKeys, info.SizeBytes)
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", filepath.Join(clibase.DataDirFromEnv(), "admin.kubeconfig"), "kubeconfig of a user who may get "+apiserver.SnapshotPath)
	return cmd
}

// saveSnapshot downloads the snapshot to a temporary file beside path,
// checks its integrity, and only then renames it into place.
func saveSnapshot(ctx context.Context, cfg *rest.Config, path string) (etcd.SnapshotInfo, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return etcd.SnapshotInfo{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+apiserver.SnapshotPath, nil)
	if err != nil {
		return etcd.SnapshotInfo{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return etcd.SnapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return etcd.SnapshotInfo{}, fmt.Errorf("snapshot: server answered %s: %s", resp.Status, body)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".snapshot-*")
	if err != nil {
		return etcd.SnapshotInfo{}, err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, resp.Body)
	if serr := tmp.Sync(); err == nil {
		err = serr
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return etcd.SnapshotInfo{}, fmt.Errorf("snapshot: download: %w", err)
	}
	info, err := etcd.VerifySnapshot(tmp.Name(), slog.Default())
	if err != nil {
		return etcd.SnapshotInfo{}, err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil { // it holds every Secret
		return etcd.SnapshotInfo{}, err
	}
	return info, os.Rename(tmp.Name(), path)
}

func newSnapshotRestoreCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Replace a stopped server's embedded store with the snapshot in FILE (the old data is kept beside it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			previous, err := etcd.RestoreEmbedded(args[0], filepath.Join(dataDir, "etcd"), slog.Default())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s into %s", args[0], filepath.Join(dataDir, "etcd"))
			if previous != "" {
				fmt.Fprintf(cmd.OutOrStdout(), " (previous data kept in %s)", previous)
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", DefaultDataDir, "the stopped server's --data-dir")
	return cmd
}
