package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap/zapcore"
)

// Embedded-member settings. Durability is etcd's default (fsync on every
// commit); berth never sets UnsafeNoFsync.
const (
	embeddedQuotaBytes    = 2 << 30 // etcd's own default, stated so it is visible
	embeddedSnapshotCount = 10000   // raft entries between snapshots
	// embeddedCatchUpEntries is how many applied raft entries stay in memory
	// after each in-memory snapshot (etcd 3.6 takes one every 100 entries).
	// They exist for slow followers to catch up from; the embedded member
	// never has followers, and etcd's default (5000 entries, each a whole
	// write request: ~3-6 MiB at bench/api's pod sizes) is heap for nothing.
	embeddedCatchUpEntries = 100
	embeddedStartTimeout   = time.Minute
)

// EmbeddedOption adjusts the embedded member.
type EmbeddedOption func(*embeddedOptions)

type embeddedOptions struct {
	quota int64
	space SpacePolicy
}

// WithQuotaBackendBytes sets the size at which the member raises NOSPACE
// and refuses writes (etcd's --quota-backend-bytes; default 2 GiB).
func WithQuotaBackendBytes(n int64) EmbeddedOption {
	return func(o *embeddedOptions) { o.quota = n }
}

// WithSpacePolicy replaces DefaultSpacePolicy.
func WithSpacePolicy(p SpacePolicy) EmbeddedOption {
	return func(o *embeddedOptions) { o.space = p }
}

// Embedded starts (or reopens) a single etcd member whose data lives in
// dataDir (created, or restricted, to mode 0700) and returns a store reached
// in-process through v3client. The member listens on no socket at all: no
// client URL, no peer URL, no metrics URL, so nothing else on the machine can
// reach it. The directory is locked while the member runs, so a second member
// on it fails at once. ctx bounds start-up only; Close stops the member.
// While it runs, a space keeper defragments it and recovers it from NOSPACE
// (SpacePolicy).
func Embedded(ctx context.Context, dataDir string, logger *slog.Logger, opts ...EmbeddedOption) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if dataDir == "" {
		return nil, errors.New("embedded etcd: empty data dir")
	}
	o := embeddedOptions{quota: embeddedQuotaBytes, space: DefaultSpacePolicy}
	for _, opt := range opts {
		opt(&o)
	}
	if o.quota <= 0 || o.space.Interval <= 0 {
		return nil, fmt.Errorf("embedded etcd: quota %d and space check interval %s must be positive", o.quota, o.space.Interval)
	}
	dir := filepath.Clean(dataDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd: create data dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd: restrict data dir: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}
	cfg := embeddedConfig(dir, logger)
	cfg.QuotaBackendBytes = o.quota
	member, err := startMember(ctx, cfg)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("embedded etcd in %s: %w", dir, err)
	}
	client := v3client.New(member.Server)
	stopped := make(chan struct{})
	keeperCtx, stopKeeper := context.WithCancel(context.Background())
	keeperDone := make(chan struct{})
	var stopOnce sync.Once
	closeFn := func() error {
		stopOnce.Do(func() { close(stopped) })
		stopKeeper()
		<-keeperDone
		err := client.Close()
		member.Close()
		lock.Close() // only once the member has let go of its files
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return err
	}
	// Reads stay linearizable even on this single member: etcd notifies
	// watchers before a write is visible to new read transactions, so a
	// serializable read right after a watch event can miss the object the
	// event announced (TestWhatAWatchDeliveredIsReadable).
	s := newStore(client, logger, closeFn)
	s.watches = newMemberWatches(member.Server.Watchable(), stopped)
	s.defragmentMember = member.Server.Defragment
	go func() {
		defer close(keeperDone)
		(&spaceKeeper{s: s, policy: o.space, quota: o.quota}).run(keeperCtx)
	}()
	return s, nil
}

// startMember starts the member and waits until it serves.
func startMember(ctx context.Context, cfg *embed.Config) (*embed.Etcd, error) {
	member, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	timeout := time.NewTimer(embeddedStartTimeout)
	defer timeout.Stop()
	select {
	case <-member.Server.ReadyNotify():
		return member, nil
	case err = <-member.Err():
	case <-timeout.C:
		err = fmt.Errorf("not ready after %s", embeddedStartTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	member.Close()
	return nil, err
}

// embeddedConfig is a single-member configuration with no listeners.
func embeddedConfig(dir string, logger *slog.Logger) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = "berth"
	cfg.Dir = dir
	// No listeners. The member still needs an advertised peer URL to name
	// itself in its one-member cluster; nothing ever dials it.
	cfg.ListenClientUrls = nil
	cfg.ListenClientHttpUrls = nil
	cfg.ListenPeerUrls = nil
	cfg.ListenMetricsUrls = nil
	cfg.AdvertiseClientUrls = nil
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.QuotaBackendBytes = embeddedQuotaBytes
	cfg.SnapshotCount = embeddedSnapshotCount
	cfg.SnapshotCatchUpEntries = embeddedCatchUpEntries
	// berth compacts with its own compactor (RunCompactor), as kube-apiserver does.
	cfg.AutoCompactionMode = embed.CompactorModeRevision
	cfg.AutoCompactionRetention = "0"
	cfg.Logger = "zap"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zapToSlog(logger.With("component", "etcd"), zapcore.WarnLevel,
		// There is no client listener at all, so no port is shared.
		"Running http and grpc server on single port. This is not recommended for production.",
		// etcd auth is off: only this process can reach the member.
		"simple token is not cryptographically signed",
		// Logged for every slow read on a busy 2-core machine; latency is
		// measured by the benchmarks and metrics instead of one line each.
		"apply request took too long",
	))
	return cfg
}
