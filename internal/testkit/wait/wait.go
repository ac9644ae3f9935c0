// Package wait is the one way berth's tests wait for a condition: every wait
// has a deadline and, when the deadline passes, says what it waited for and
// what it saw last, so that a broken condition fails the test in seconds
// instead of hanging until the package timeout.
package wait

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// First and longest pause between two checks: quick conditions are seen at
// once, slow ones are not polled in a busy loop.
const (
	firstInterval = 5 * time.Millisecond
	maxInterval   = 100 * time.Millisecond
)

// Poll calls cond until it returns nil, ctx ends, or timeout passes. cond's
// errors are not fatal: each says why the condition does not hold yet, and the
// last one is in the returned error, which names what. cond's context carries
// the deadline.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	interval := firstInterval
	timer := time.NewTimer(0)
	defer timer.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			return timedOut(ctx, timeout, what, last)
		case <-timer.C:
		}
		if last = cond(ctx); last == nil {
			return nil
		}
		timer.Reset(interval)
		interval = min(2*interval, maxInterval)
	}
}

func timedOut(ctx context.Context, timeout time.Duration, what string, last error) error {
	reason := "timed out after " + timeout.String()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		reason = "stopped (" + ctx.Err().Error() + ")"
	}
	if last == nil || errors.Is(last, errNotYet) {
		return fmt.Errorf("%s waiting for %s", reason, what)
	}
	return fmt.Errorf("%s waiting for %s: last: %w", reason, what, last)
}

// errNotYet stands for a false boolean condition, which has nothing to add.
var errNotYet = errors.New("condition not met")

// Until fails t unless cond returns true within timeout.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	UntilNil(t, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// UntilNil fails t unless cond returns nil within timeout; the failure
// carries cond's last error, which should say what it saw instead.
func UntilNil(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	err := Poll(context.Background(), timeout, what, func(context.Context) error { return cond() })
	if err != nil {
		t.Fatal(err)
	}
}

// UntilCtx is UntilNil for conditions that call out (API, CRI): cond's
// context ends at the deadline, so a hung call cannot outlast it, and ends
// with the test.
func UntilCtx(t testing.TB, timeout time.Duration, what string, cond func(context.Context) error) {
	t.Helper()
	err := Poll(t.Context(), timeout, what, cond)
	if err != nil {
		t.Fatal(err)
	}
}

// PollTrue is Poll for conditions of apimachinery's shape: cond reports
// whether the condition holds, and an error from it ends the wait at once,
// for a check whose failure no later try can mend (a Get that must not fail).
func PollTrue(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	var fatal error
	err := Poll(ctx, timeout, what, func(ctx context.Context) error {
		done, err := cond(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			fatal = err
			return nil
		case err != nil:
			return err // the deadline cut the check short
		case !done:
			return errNotYet
		}
		return nil
	})
	if fatal != nil {
		return fmt.Errorf("waiting for %s: %w", what, fatal)
	}
	return err
}

// UntilTrue fails t unless cond returns true within timeout; an error from
// cond fails t at once (see PollTrue).
func UntilTrue(t testing.TB, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := PollTrue(t.Context(), timeout, what, cond); err != nil {
		t.Fatal(err)
	}
}
