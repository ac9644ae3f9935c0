package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sync/singleflight"

	"github.com/berth/berth/internal/atomicfile"
)

// snapshotter keeps each layer unpacked once, in dir/<chainID hex>/fs, laid
// out as an overlayfs lowerdir, and shared by every image whose layer stack
// reaches that chain ID.
type snapshotter struct {
	dir    string
	unpack singleflight.Group
	// maxLayerSize bounds one layer's uncompressed size (Config.MaxLayerSize).
	maxLayerSize int64

	mu sync.Mutex
	// sizes remembers each snapshot's disk usage: snapshots never change.
	sizes map[string]snapshotSize
}

type snapshotSize struct{ bytes, inodes uint64 }

func newSnapshotter(dir string, maxLayerSize int64) (*snapshotter, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create snapshot dir: %w", err)
	}
	// Half-unpacked layers from a crash are garbage.
	stale, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	for _, d := range stale {
		os.RemoveAll(d)
	}
	return &snapshotter{dir: dir, maxLayerSize: maxLayerSize, sizes: map[string]snapshotSize{}}, nil
}

// path is the lowerdir of the snapshot for chainID.
func (s *snapshotter) path(chainID string) string {
	return filepath.Join(s.dir, strings.TrimPrefix(chainID, "sha256:"), "fs")
}

func (s *snapshotter) exists(chainID string) bool {
	_, err := os.Stat(s.path(chainID))
	return err == nil
}

// ensure unpacks the layer with the given diffID into the snapshot for
// chainID unless it already exists. open yields the uncompressed layer tar;
// its content must hash to diffID. It reports whether it unpacked.
func (s *snapshotter) ensure(ctx context.Context, chainID, diffID string, open func() (io.ReadCloser, error)) (bool, error) {
	if s.exists(chainID) {
		return false, nil
	}
	v, err, _ := s.unpack.Do(chainID, func() (any, error) {
		if s.exists(chainID) {
			return false, nil
		}
		return true, s.unpackInto(ctx, chainID, diffID, open)
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}

// unpackInto extracts into a temporary directory and renames it into place,
// so a snapshot directory that exists is always complete.
func (s *snapshotter) unpackInto(ctx context.Context, chainID, diffID string, open func() (io.ReadCloser, error)) error {
	tmp, err := os.MkdirTemp(s.dir, ".tmp-")
	if err != nil {
		return fmt.Errorf("create snapshot temp: %w", err)
	}
	defer os.RemoveAll(tmp)
	fs := filepath.Join(tmp, "fs")
	if err := os.Mkdir(fs, 0o755); err != nil {
		return fmt.Errorf("create snapshot temp: %w", err)
	}
	rc, err := open()
	if err != nil {
		return fmt.Errorf("open layer %s: %w", diffID, err)
	}
	defer rc.Close()
	h := sha256.New()
	tee := io.TeeReader(&ctxReader{ctx: ctx, r: rc}, h)
	if err := unpackLayer(fs, tee, s.maxLayerSize); err != nil {
		return fmt.Errorf("unpack layer %s: %w", diffID, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID {
		return fmt.Errorf("layer content has diffID %s, config says %s", got, diffID)
	}
	// Make the unpacked files durable before the snapshot becomes visible:
	// after a crash an existing snapshot must never hold empty or torn
	// files.
	if err := syncTree(ctx, tmp); err != nil {
		return fmt.Errorf("sync snapshot %s: %w", chainID, err)
	}
	final := filepath.Dir(s.path(chainID))
	if err := os.Rename(tmp, final); err != nil {
		if s.exists(chainID) {
			return nil // unpacked meanwhile by another process; ours is redundant
		}
		return fmt.Errorf("commit snapshot %s: %w", chainID, err)
	}
	return atomicfile.SyncPath(s.dir)
}

// prune removes every snapshot that keep does not list and pins does not
// hold. Each goes by an atomic rename out of sight first, so no pull ever
// sees a half-deleted snapshot.
func (s *snapshotter) prune(keep map[string]bool, pins *pinSet) error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		id := "sha256:" + e.Name()
		if keep[id] {
			continue
		}
		trash := filepath.Join(s.dir, ".tmp-gc-"+e.Name())
		err := pins.unlessPinned(id, func() error {
			return os.Rename(filepath.Join(s.dir, e.Name()), trash)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("remove snapshot %s: %w", id, err))
			continue
		}
		s.mu.Lock()
		delete(s.sizes, e.Name())
		s.mu.Unlock()
		if err := os.RemoveAll(trash); err != nil {
			errs = append(errs, fmt.Errorf("remove snapshot %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// usage sums the disk usage of every snapshot, measuring each only once.
func (s *snapshotter) usage() (bytes, inodes uint64, err error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, 0, fmt.Errorf("list snapshots: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue // being unpacked or removed
		}
		s.mu.Lock()
		size, ok := s.sizes[e.Name()]
		s.mu.Unlock()
		if !ok {
			b, n, err := diskUsage(filepath.Join(s.dir, e.Name()))
			if errors.Is(err, os.ErrNotExist) {
				continue // pruned since the listing
			}
			if err != nil {
				return 0, 0, err
			}
			size = snapshotSize{bytes: b, inodes: n}
			s.mu.Lock()
			s.sizes[e.Name()] = size
			s.mu.Unlock()
		}
		bytes += size.bytes
		inodes += size.inodes
	}
	return bytes, inodes, nil
}

// chainIDs computes the chain ID of each layer from the diffIDs (OCI
// image-spec config.md): chain(0) = diff(0); chain(n) = sha256(chain(n-1) + " " + diff(n)).
func chainIDs(diffIDs []v1.Hash) []string {
	out := make([]string, len(diffIDs))
	for i, d := range diffIDs {
		if i == 0 {
			out[i] = d.String()
			continue
		}
		sum := sha256.Sum256([]byte(out[i-1] + " " + d.String()))
		out[i] = "sha256:" + hex.EncodeToString(sum[:])
	}
	return out
}

// ctxReader stops a long copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
