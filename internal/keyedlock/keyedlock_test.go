package keyedlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
)

// waitForUsers waits until key has n holders and waiters, so a test knows
// its waiter is queued before it acts.
func waitForUsers(t *testing.T, l *Locks, key string, n int) {
	t.Helper()
	wait.Until(t, 10*time.Second, fmt.Sprintf("%d holders and waiters of %q", n, key), func() bool { return l.Users(key) == n })
}

func TestLockServesOneCallerPerKeyAndKeysInParallel(t *testing.T) {
	var l Locks
	unlockA := l.Lock("a")
	got := make(chan func(), 1)
	go func() { got <- l.Lock("a") }()
	waitForUsers(t, &l, "a", 2)

	// a is held: b is not held up by it.
	unlockB, err := l.LockContext(t.Context(), "b")
	if err != nil {
		t.Fatalf("b waited on a: %v", err)
	}
	unlockB()
	select {
	case <-got:
		t.Fatal("a second caller held a while the first did")
	default:
	}

	unlockA()
	(<-got)()
	if n := l.Len(); n != 0 {
		t.Errorf("%d key entries left with no holder or waiter", n)
	}
}

func TestLockContextStopsWaitingWhenItsContextEnds(t *testing.T) {
	var l Locks
	unlock := l.Lock("a")
	ctx, cancel := context.WithCancel(t.Context())
	waited := make(chan error, 1)
	go func() {
		_, err := l.LockContext(ctx, "a")
		waited <- err
	}()
	waitForUsers(t, &l, "a", 2)
	cancel()
	// The holder still holds a: the waiter can only return by giving up.
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("LockContext cancelled while a was held: %v, want context.Canceled", err)
	}
	waitForUsers(t, &l, "a", 1)
	unlock()
	if n := l.Len(); n != 0 {
		t.Errorf("%d key entries left with no holder or waiter", n)
	}
	// The key is free again: the abandoned wait left no token behind.
	again, err := l.LockContext(t.Context(), "a")
	if err != nil {
		t.Fatalf("a after its waiter gave up: %v", err)
	}
	again()
}

// TestLockExcludesUnderContention: many callers on few keys, never two in
// one key at once, and no entry left when all are done.
func TestLockExcludesUnderContention(t *testing.T) {
	var l Locks
	keys := []string{"a", "b", "c"}
	inside := make([]atomic.Int32, len(keys))
	counts := make([]int, len(keys)) // guarded by the key's lock alone
	var wg sync.WaitGroup
	for g := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				k := (g + i) % len(keys)
				unlock := l.Lock(keys[k])
				if n := inside[k].Add(1); n != 1 {
					t.Errorf("%d callers inside %q at once", n, keys[k])
				}
				counts[k]++
				inside[k].Add(-1)
				unlock()
			}
		}()
	}
	wg.Wait()
	if total := counts[0] + counts[1] + counts[2]; total != 3000 {
		t.Errorf("%d increments counted, want 3000 (%v)", total, counts)
	}
	if n := l.Len(); n != 0 {
		t.Errorf("%d key entries left with no holder or waiter", n)
	}
}
