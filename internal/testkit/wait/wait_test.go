package wait

import (
	"context"
	"errors"
	"fmt"
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

// recorder is a testing.TB that records a Fatal instead of ending the test,
// so the helpers' failures can be checked.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) { r.failure = fmt.Sprint(args...) }

func (r *recorder) Fatalf(format string, args ...any) { r.failure = fmt.Sprintf(format, args...) }

func TestUntilTrueStopsAtTheFirstError(t *testing.T) {
	r := &recorder{TB: t}
	calls := 0
	UntilTrue(r, time.Hour, "a readable object", func(context.Context) (bool, error) {
		calls++
		return false, errors.New("forbidden")
	})
	if calls != 1 || r.failure != "waiting for a readable object: forbidden" {
		t.Fatalf("after %d calls the failure is %q, want one call and the error", calls, r.failure)
	}
}

func TestUntilTrueTimesOutNamingWhatItWaitedFor(t *testing.T) {
	r := &recorder{TB: t}
	UntilTrue(r, 20*time.Millisecond, "the pod to go", func(context.Context) (bool, error) { return false, nil })
	if r.failure != "timed out after 20ms waiting for the pod to go" {
		t.Fatalf("failure %q", r.failure)
	}
	r.failure = ""
	UntilTrue(r, time.Minute, "the pod to go", func(context.Context) (bool, error) { return true, nil })
	if r.failure != "" {
		t.Fatalf("a condition that holds failed: %q", r.failure)
	}
}

func TestPollTrueEndsAtTheFirstErrorAndKeepsIt(t *testing.T) {
	forbidden := errors.New("forbidden")
	err := PollTrue(context.Background(), time.Hour, "a readable object", func(context.Context) (bool, error) {
		return false, forbidden
	})
	if !errors.Is(err, forbidden) || err.Error() != "waiting for a readable object: forbidden" {
		t.Fatalf("PollTrue = %v, want the condition's error", err)
	}
}
