package server

import (
	"context"
	"log/slog"
)

// undoStack collects the steps that reverse a half-done create, so a failed
// RunPodSandbox or CreateContainer leaves nothing behind.
type undoStack struct {
	steps []undoStep
}

type undoStep struct {
	what string
	fn   func(context.Context) error
}

func (u *undoStack) add(what string, fn func(context.Context) error) {
	u.steps = append(u.steps, undoStep{what, fn})
}

// run undoes every step, newest first, even if the request was cancelled.
func (u *undoStack) run(ctx context.Context, log *slog.Logger) {
	ctx = context.WithoutCancel(ctx)
	for i := len(u.steps) - 1; i >= 0; i-- {
		if err := u.steps[i].fn(ctx); err != nil {
			log.Warn("cleanup after failed create", "step", u.steps[i].what, "err", err)
		}
	}
	u.steps = nil
}
