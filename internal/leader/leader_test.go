package leader

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/testkit/apitest"
	"github.com/berth/berth/internal/testkit/wait"
)

// candidate is one in-process component runner: it campaigns with its own
// client (which the test can cut off, as a crashed or partitioned replica)
// and records when it leads.
type candidate struct {
	id      string
	cut     atomic.Bool
	leading atomic.Bool
	stop    context.CancelFunc
	done    chan struct{} // closed when Run has returned, with err
	err     error
}

// leaders counts candidates leading at once and the most ever seen.
type leaders struct {
	mu          sync.Mutex
	now, most   int
	leadedTerms map[string]int
}

func (l *leaders) enter(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now++
	l.most = max(l.most, l.now)
	l.leadedTerms[id]++
}

func (l *leaders) leave() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now--
}

func startCandidate(t *testing.T, base *rest.Config, id string, all *leaders) *candidate {
	c := &candidate{id: id, done: make(chan struct{})}
	cfg := rest.CopyConfig(base)
	cfg.Timeout = time.Second
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if c.cut.Load() {
				return nil, errors.New("cut off by the test")
			}
			return next.RoundTrip(r)
		})
	})
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	t.Cleanup(func() { cancel(); <-c.done })
	go func() {
		defer close(c.done)
		c.err = Run(ctx, Config{
			Client: kubernetes.NewForConfigOrDie(cfg), Name: "berth-test", Identity: id, Logger: apitest.Logger(t),
			LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		}, func(ctx context.Context) {
			all.enter(id)
			c.leading.Store(true)
			<-ctx.Done()
			c.leading.Store(false)
			all.leave()
		})
	}()
	return c
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func holder(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	lease, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), "berth-test", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// Two runners against one API server: exactly one leads, the Lease names
// it; when it stops cleanly the other takes over, and when that one is cut
// off from the API (a crash or partition) it steps down and the first,
// restarted, takes over once the lease expires.
func TestExactlyOneLeadsAndTheOtherTakesOver(t *testing.T) {
	base := apitest.Start(t)
	cs := kubernetes.NewForConfigOrDie(base)
	all := &leaders{leadedTerms: map[string]int{}}
	a := startCandidate(t, base, "replica-a", all)
	b := startCandidate(t, base, "replica-b", all)

	wait.Until(t, time.Minute, "a leader", func() bool { return a.leading.Load() || b.leading.Load() })
	first, second := a, b
	if b.leading.Load() {
		first, second = b, a
	}
	if got := holder(t, cs); got != first.id {
		t.Fatalf("lease held by %q, but %s leads", got, first.id)
	}
	// Both keep campaigning for several renewals; the second must stay out.
	for range 10 {
		time.Sleep(200 * time.Millisecond) //wait:intended lets renewals pass to show the second candidate stays out
		if second.leading.Load() {
			t.Fatalf("%s leads while %s holds the lease", second.id, first.id)
		}
	}

	first.stop() // a clean stop releases the lease once the loop has stopped
	<-first.done
	if first.err != nil {
		t.Fatalf("%s: Run: %v", first.id, first.err)
	}
	wait.Until(t, time.Minute, second.id+" to take over", second.leading.Load)
	if got := holder(t, cs); got != second.id {
		t.Errorf("lease held by %q after take-over, want %s", got, second.id)
	}

	again := startCandidate(t, base, first.id, all)
	second.cut.Store(true) // it can no longer renew
	wait.Until(t, time.Minute, second.id+" to step down when it cannot renew", func() bool { return !second.leading.Load() })
	wait.Until(t, time.Minute, "the restarted "+again.id+" to take over", again.leading.Load)

	all.mu.Lock()
	defer all.mu.Unlock()
	if all.most != 1 {
		t.Errorf("%d candidates led at once", all.most)
	}
	if all.leadedTerms[first.id] != 2 || all.leadedTerms[second.id] != 1 {
		t.Errorf("terms led: %v; want %s twice, %s once", all.leadedTerms, first.id, second.id)
	}
}
