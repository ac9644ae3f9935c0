package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/berth/berth/internal/store"
)

var _ store.Snapshotter = (*Store)(nil)

// Snapshot streams a consistent snapshot of the whole keyspace, in etcd's
// own snapshot format (etcdutl can read and restore it).
func (s *Store) Snapshot(ctx context.Context) (io.ReadCloser, error) {
	rc, err := s.client.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("store snapshot: %w", mapErr(err))
	}
	return rc, nil
}

// SnapshotInfo describes a snapshot file.
type SnapshotInfo struct {
	Revision  int64
	TotalKeys int
	SizeBytes int64
}

// VerifySnapshot checks a snapshot file's integrity hash and reads its
// revision and key count.
func VerifySnapshot(path string, logger *slog.Logger) (SnapshotInfo, error) {
	st, err := snapshot.NewV3(zapLogger(logger)).Status(path)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return SnapshotInfo{Revision: st.Revision, TotalKeys: st.TotalKey, SizeBytes: st.TotalSize}, nil
}

// RestoreEmbedded replaces the embedded member's data in dataDir (the
// directory Embedded is given) with the snapshot at path. The member must be
// stopped: the directory's lock is taken first. The previous data is kept
// beside it as <dataDir>.before-restore-<unix time>, never deleted.
func RestoreEmbedded(path, dataDir string, logger *slog.Logger) (previous string, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dir := filepath.Clean(dataDir)
	if _, err := VerifySnapshot(path, logger); err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); err == nil {
		lock, err := lockDir(dir)
		if err != nil {
			return "", fmt.Errorf("restore: %w", err)
		}
		defer lock.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("restore: %w", err)
	}
	staging := dir + ".restoring"
	if err := os.RemoveAll(staging); err != nil {
		return "", fmt.Errorf("restore: clear %s: %w", staging, err)
	}
	// The restored member must be the one Embedded starts: same name,
	// cluster and token, so it comes up as itself with no peers to find.
	cfg := embeddedConfig(dir, logger)
	err = snapshot.NewV3(zapLogger(logger)).Restore(snapshot.RestoreConfig{
		SnapshotPath:        path,
		Name:                cfg.Name,
		OutputDataDir:       staging,
		PeerURLs:            urlStrings(cfg.AdvertisePeerUrls),
		InitialCluster:      cfg.InitialCluster,
		InitialClusterToken: cfg.InitialClusterToken,
	})
	if err != nil {
		os.RemoveAll(staging)
		return "", fmt.Errorf("restore %s: %w", path, err)
	}
	if err := os.Chmod(staging, 0o700); err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	if _, err := os.Stat(dir); err == nil {
		previous = fmt.Sprintf("%s.before-restore-%d", dir, time.Now().Unix())
		if err := os.Rename(dir, previous); err != nil {
			return "", fmt.Errorf("restore: keep the previous data: %w", err)
		}
	}
	if err := os.Rename(staging, dir); err != nil {
		return previous, fmt.Errorf("restore: %w", err)
	}
	return previous, nil
}

func zapLogger(logger *slog.Logger) *zap.Logger {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return zapToSlog(logger.With("component", "etcd"), zapcore.WarnLevel)
}

func urlStrings(urls []url.URL) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = u.String()
	}
	return out
}
