// Package clibase is what every berth executable's command tree shares: the
// root command with --log-level, the command-line contract's defaults, and
// running a tree so that an error is one clear line. It is apart from
// internal/cli so that berth-runtime links none of the other subcommands.
package clibase

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Defaults shared by several subcommands (design brief: command-line contract).
const (
	DefaultDataDir   = "/var/lib/berth"
	DefaultSocketDir = "/run/berth"
	DefaultAPIPort   = 6443
)

// NewRoot is the `berth` root command writing to out and errOut, with no
// subcommands: its --log-level sets slog's default logger before any
// subcommand runs.
func NewRoot(out, errOut io.Writer) *cobra.Command {
	var logLevel string
	root := &cobra.Command{
		Use:           "berth",
		Short:         "berth: a small, secure, Kubernetes-compatible container orchestrator",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(errOut, logLevel)
			if err != nil {
				return err
			}
			slog.SetDefault(logger)
			return nil
		},
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return root
}

// ExecuteCompanion runs a companion executable: `berth ARGS` with cmd as
// the only subcommand, on the process's standard streams. It returns the
// process exit code.
func ExecuteCompanion(cmd *cobra.Command, args []string) int {
	root := NewRoot(os.Stdout, os.Stderr)
	root.AddCommand(cmd)
	return Execute(root, args)
}

// Execute runs root with args until it returns or SIGTERM/SIGINT cancels
// its context, and returns the process exit code.
func Execute(root *cobra.Command, args []string) int {
	root.SetArgs(args)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		// One clear line, as the CLI contract asks.
		fmt.Fprintf(root.ErrOrStderr(), "berth: %v\n", err)
		return 1
	}
	return 0
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("invalid --log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// DataDirFromEnv is the server's data directory for commands that read its
// admin kubeconfig: BERTH_DATA_DIR lets a user with a non-default
// --data-dir point them at it without a kubeconfig flag.
func DataDirFromEnv() string {
	if d := os.Getenv("BERTH_DATA_DIR"); d != "" {
		return d
	}
	return DefaultDataDir
}
