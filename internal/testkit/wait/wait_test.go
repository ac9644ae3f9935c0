package wait

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPollReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	err := Poll(context.Background(), 10*time.Second, "the third call", func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Poll = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestPollNamesWhatItWaitedForAndWhatItSawLast(t *testing.T) {
	err := Poll(context.Background(), 50*time.Millisecond, "the pod to run", func(context.Context) error {
		return errors.New("phase Pending")
	})
	if err == nil {
		t.Fatal("Poll of a condition that never holds returned nil")
	}
	for _, want := range []string{"timed out after 50ms", "waiting for the pod to run", "last: phase Pending"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestPollOfABooleanConditionAddsNoLastState(t *testing.T) {
	err := Poll(context.Background(), 20*time.Millisecond, "x", func(context.Context) error { return errNotYet })
	if err == nil || strings.Contains(err.Error(), "last:") {
		t.Fatalf("Poll = %v, want a timeout without a last state", err)
	}
}

func TestPollStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Poll(ctx, time.Hour, "y", func(context.Context) error { return errNotYet })
	if err == nil || !strings.Contains(err.Error(), "stopped (context canceled) waiting for y") {
		t.Fatalf("Poll = %v, want it stopped by the canceled context", err)
	}
}

func TestConditionContextEndsAtTheDeadline(t *testing.T) {
	err := Poll(context.Background(), 30*time.Millisecond, "a hung call", func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if err == nil || !strings.Contains(err.Error(), "waiting for a hung call") {
		t.Fatalf("Poll = %v, want the hung call cut off at the deadline", err)
	}
}
