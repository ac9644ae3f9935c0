package apiserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
)

// waitForUsers waits until node has n holders and waiters, so a test knows
// its waiter is queued before it acts. (internal/keyedlock's tests show the
// turns' exclusion, order and cleanup; these show what nodeTurns adds.)
func waitForUsers(t *testing.T, turns *nodeTurns, node string, n int) {
	t.Helper()
	wait.Until(t, 30*time.Second, fmt.Sprintf("node %s to have %d holders and waiters", node, n), func() bool {
		return turns.locks.Users(node) == n
	})
}

func TestNodeTurnWaitStopsWhenItsContextEndsAndSaysWhichNode(t *testing.T) {
	t.Parallel()
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
	err = <-waited
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "node a's accounting turn") {
		t.Fatalf("wait cancelled while a was held: %v, want context.Canceled naming node a's turn", err)
	}
	done()
	if n := turns.locks.Len(); n != 0 {
		t.Errorf("%d node entries left with no holder or waiter", n)
	}
}
