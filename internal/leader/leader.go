// Package leader runs a control loop only while this process holds a
// Lease, so that several berth server replicas sharing one external etcd
// run one scheduler and one of each controller between them. It is
// client-go's leader election (a coordination.k8s.io Lease, as
// kube-scheduler and kube-controller-manager use), plus the part client-go
// leaves to its callers: the loop has stopped before the lease is released
// or contested again, and a replica that loses the lease campaigns anew.
package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Timings of kube-scheduler's and kube-controller-manager's defaults: a
// leader renews within 10 s or steps down; others take over 15 s after
// the last renewal (at once when the leader releases the lease on a clean stop).
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Config names the lease and the candidate.
type Config struct {
	Client kubernetes.Interface
	// Namespace and Name locate the Lease (Namespace defaults to kube-system).
	Namespace, Name string
	// Identity tells candidates apart; NewIdentity makes a unique one.
	Identity string
	// Zero durations take the defaults above.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Logger                                    *slog.Logger
}

// NewIdentity is the host name plus a random suffix: unique per process,
// readable in the Lease's holderIdentity.
func NewIdentity() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "berth"
	}
	return host + "_" + string(uuid.NewUUID())
}

func (c *Config) complete() error {
	if c.Client == nil || c.Name == "" || c.Identity == "" {
		return errors.New("leader: Client, Name and Identity are required")
	}
	if c.Namespace == "" {
		c.Namespace = metav1.NamespaceSystem
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = DefaultLeaseDuration, DefaultRenewDeadline, DefaultRetryPeriod
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Run campaigns for the lease until ctx ends; whenever it holds the lease
// it runs lead, whose context ends when the lease is lost or ctx ends. If
// lead returns on its own, Run releases the lease and campaigns again.
func Run(ctx context.Context, cfg Config, lead func(context.Context)) error {
	if err := cfg.complete(); err != nil {
		return err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Client:     cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}
	for ctx.Err() == nil {
		if err := campaign(ctx, cfg, lock, lead); err != nil {
			return err
		}
	}
	return nil
}

// campaign is one term: wait for the lease, lead while holding it, and
// return once lead has stopped and the lease is lost or released.
func campaign(ctx context.Context, cfg Config, lock resourcelock.Interface, lead func(context.Context)) error {
	// The election outlives ctx until lead has stopped: only then is the
	// lease released (ReleaseOnCancel), so two leaders never overlap on a
	// clean stop.
	electCtx, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElecting()
	t := &term{done: make(chan struct{})}
	stopWatching := context.AfterFunc(ctx, func() {
		if !t.stop() {
			stopElecting() // not leading: nothing to wait for
		}
	})
	defer stopWatching()

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            cfg.Name,
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaseCtx context.Context) {
				if !t.start() {
					return
				}
				defer close(t.done)
				defer stopElecting() // lead returned: hand the lease on
				leadCtx, cancel := context.WithCancel(leaseCtx)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				cfg.Logger.Info("leading", "lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)
				lead(leadCtx)
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election for %s: %w", cfg.Name, err)
	}
	elector.Run(electCtx)
	if t.wasStarted() {
		<-t.done
		cfg.Logger.Info("stopped leading", "lease", cfg.Namespace+"/"+cfg.Name, "identity", cfg.Identity)
	}
	return nil
}

// term tracks whether lead started in one campaign, so that stopping
// either waits for it or stops the election at once, never both or neither.
type term struct {
	mu       sync.Mutex
	started  bool
	stopping bool
	done     chan struct{} // closed when lead has returned (if it started)
}

// start reports whether lead may start (false once stopping).
func (t *term) start() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.started = !t.stopping
	return t.started
}

// stop marks the term stopping and reports whether lead had started.
func (t *term) stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopping = true
	return t.started
}

func (t *term) wasStarted() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.started
}
