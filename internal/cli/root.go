// Package cli assembles berth's cobra command tree. Each subcommand lives in
// its own file and only parses flags and hands over to its component package,
// so the architecture stays visible in internal/<component>.
package cli

import (
	"context"
	"errors"
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

// Execute runs berth with args and returns the process exit code.
func Execute(args []string) int {
	root := NewRootCommand(os.Stdout, os.Stderr)
	root.SetArgs(args)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		var exit exitCodeError
		if errors.As(err, &exit) {
			return exit.code
		}
		// One clear line, as the CLI contract asks.
		fmt.Fprintf(os.Stderr, "berth: %v\n", err)
		return 1
	}
	return 0
}

// exitCodeError carries a child command's exit code (kubectl) without a message.
type exitCodeError struct{ code int }

func (e exitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// NewRootCommand builds the command tree writing to out and errOut.
func NewRootCommand(out, errOut io.Writer) *cobra.Command {
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

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("invalid --log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
