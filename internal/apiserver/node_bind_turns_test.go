package apiserver

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// waitForUsers yields until node has n holders and waiters, so a test knows
// its waiter is queued before it acts; the test's deadline bounds it.
func waitForUsers(t *testing.T, turns *nodeTurns, node string, n int) {
	t.Helper()
	ctx := testContext(t)
	for {
		turns.mu.Lock()
		users := 0
		if turn, ok := turns.nodes[node]; ok {
			users = turn.users
		}
		turns.mu.Unlock()
		if users == n {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("node %s has %d users, want %d", node, users, n)
		}
		runtime.Gosched()
	}
}

func TestNodeTurnsServeOneAtATimePerNodeAndNodesInParallel(t *testing.T) {
	turns := newNodeTurns()
	ctx := testContext(t)
	doneA, err := turns.wait(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		done, err := turns.wait(ctx, "a")
		if err != nil {
			t.Errorf("second wait on a: %v", err)
		}
		got <- done
	}()
	waitForUsers(t, turns, "a", 2)

	// a is held: b is not held up by it.
	doneB, err := turns.wait(ctx, "b")
	if err != nil {
		t.Fatalf("node b waited on node a's turn: %v", err)
	}
	doneB()
	select {
	case <-got:
		t.Fatal("a second caller had node a's turn while the first held it")
	default:
	}

	doneA()
	(<-got)()
	if n := turns.tracked(); n != 0 {
		t.Errorf("%d node entries left with no holder or waiter", n)
	}
}

func TestNodeTurnWaitStopsWhenItsContextEnds(t *testing.T) {
	turns := newNodeTurns()
	done, err := turns.wait(testContext(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testContext(t))
	waited := make(chan error, 1)
	go func() {
		_, err := turns.wait(ctx, "a")
		waited <- err
	}()
	waitForUsers(t, turns, "a", 2)
	cancel()
	// The holder still holds a: the waiter can only return by giving up.
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("wait cancelled while a was held: %v, want context.Canceled", err)
	}
	waitForUsers(t, turns, "a", 1)
	done()
	if n := turns.tracked(); n != 0 {
		t.Errorf("%d node entries left with no holder or waiter", n)
	}
}
