package image

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// blobStore keeps blobs (manifests, configs, compressed layers) by digest
// under dir/sha256/<hex>. Written by hand rather than with
// go-containerregistry's layout.Path because that writes straight to the final
// name without fsync or digest check, so a crash or a lying registry could
// leave a blob whose name does not match its content.
type blobStore struct {
	dir string
}

func newBlobStore(dir string) (*blobStore, error) {
	if err := os.MkdirAll(filepath.Join(dir, "sha256"), 0o700); err != nil {
		return nil, fmt.Errorf("create blob dir: %w", err)
	}
	// Temp files left by a crash mid-download are garbage.
	stale, _ := filepath.Glob(filepath.Join(dir, "sha256", ".tmp-*"))
	for _, f := range stale {
		os.Remove(f)
	}
	return &blobStore{dir: dir}, nil
}

func (b *blobStore) path(d v1.Hash) (string, error) {
	if d.Algorithm != "sha256" || len(d.Hex) != 64 || strings.Trim(d.Hex, "0123456789abcdef") != "" {
		return "", fmt.Errorf("unsupported digest %q", d.String())
	}
	return filepath.Join(b.dir, "sha256", d.Hex), nil
}

// Has reports whether the blob is present.
func (b *blobStore) Has(d v1.Hash) bool {
	p, err := b.path(d)
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

// Write stores r's content as blob d, verifying the digest. It returns the
// number of bytes written (0 if the blob was already present).
func (b *blobStore) Write(d v1.Hash, r io.Reader) (int64, error) {
	final, err := b.path(d)
	if err != nil {
		return 0, err
	}
	if b.Has(d) {
		return 0, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(final), ".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("create blob temp: %w", err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), r)
	if err != nil {
		tmp.Close()
		return n, fmt.Errorf("write blob %s: %w", d, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != d.Hex {
		tmp.Close()
		return n, fmt.Errorf("blob %s: content has digest sha256:%s", d, got)
	}
	if err := commitTemp(tmp, final, 0o600); err != nil {
		return n, err
	}
	return n, nil
}

// WriteBytes stores data as blob d.
func (b *blobStore) WriteBytes(d v1.Hash, data []byte) error {
	_, err := b.Write(d, bytes.NewReader(data))
	return err
}

// Open returns the blob's content.
func (b *blobStore) Open(d v1.Hash) (*os.File, error) {
	p, err := b.path(d)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

// ReadAll returns a small blob's content.
func (b *blobStore) ReadAll(d v1.Hash) ([]byte, error) {
	p, err := b.path(d)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// Remove deletes the blob; a missing blob is not an error.
func (b *blobStore) Remove(d v1.Hash) error {
	p, err := b.path(d)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove blob %s: %w", d, err)
	}
	return nil
}

// list returns the digests of all stored blobs.
func (b *blobStore) list() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(b.dir, "sha256"))
	if err != nil {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, "sha256:"+e.Name())
		}
	}
	return out, nil
}
