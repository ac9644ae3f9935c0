package crirun

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Main runs a bench command's body: with a context cancelled on ^C or
// SIGTERM, so that every deferred clean-up still runs (a bench leaves
// daemons, mounts and bridges behind otherwise), and progress logged as
// text on stderr. An error is printed after prefix and exits with status 1.
func Main(prefix string, run func(context.Context, *slog.Logger) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, prefix+":", err)
		os.Exit(1)
	}
}
