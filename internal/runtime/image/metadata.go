package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berth/berth/internal/atomicfile"
)

// imageRecord is what the store knows about one image. The image ID is the
// digest of its config, as in containerd and CRI-O.
type imageRecord struct {
	ID             string   `json:"id"`
	ManifestDigest string   `json:"manifestDigest"`
	RepoTags       []string `json:"repoTags,omitempty"`
	RepoDigests    []string `json:"repoDigests,omitempty"`
	DiffIDs        []string `json:"diffIDs"`
	ChainIDs       []string `json:"chainIDs"`
	// Blobs lists every blob the image holds (manifest, config, layers), so
	// removal can collect the ones no other image shares.
	Blobs []string `json:"blobs"`
	// Size is the image's content size: manifest, config and compressed layers.
	Size uint64 `json:"size"`
}

// metadata is the persisted index of every image by ID. Which container
// uses which image is not in it: each container's mount record says that
// (see Service.users), so creating a container rewrites no index.
type metadata struct {
	Images map[string]*imageRecord `json:"images"`
}

// metadataStore holds the index in memory and persists each change
// atomically (write-temp, fsync, rename) before making it visible.
type metadataStore struct {
	path string
	mu   sync.RWMutex
	data *metadata
}

func openMetadataStore(path string) (*metadataStore, error) {
	m := &metadataStore{path: path, data: &metadata{}}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read image metadata: %w", err)
	default:
		if err := json.Unmarshal(raw, m.data); err != nil {
			return nil, fmt.Errorf("image metadata %s is corrupt: %w", path, err)
		}
	}
	if m.data.Images == nil {
		m.data.Images = map[string]*imageRecord{}
	}
	return m, nil
}

// view runs fn on the current index; fn must not modify or retain it.
func (m *metadataStore) view(fn func(*metadata)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	fn(m.data)
}

// update applies fn to a copy of the index and, if fn succeeds, persists the
// copy and makes it current. A failing fn or write changes nothing.
func (m *metadataStore) update(fn func(*metadata) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	next, err := cloneMetadata(m.data)
	if err != nil {
		return err
	}
	if err := fn(next); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return fmt.Errorf("encode image metadata: %w", err)
	}
	if err := atomicfile.WriteFile(m.path, raw, 0o600); err != nil {
		return fmt.Errorf("persist image metadata: %w", err)
	}
	m.data = next
	return nil
}

func cloneMetadata(md *metadata) (*metadata, error) {
	raw, err := json.Marshal(md)
	if err != nil {
		return nil, fmt.Errorf("copy image metadata: %w", err)
	}
	out := &metadata{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("copy image metadata: %w", err)
	}
	return out, nil
}

// find looks an image up by ID ("sha256:HEX", "HEX" or a unique prefix of
// HEX), by tag or by repo digest. It returns nil if there is none, and a gRPC
// InvalidArgument error for a reference that is not valid.
func (md *metadata) find(ref string) (*imageRecord, error) {
	if rec := md.byID(ref); rec != nil {
		return rec, nil
	}
	parsed, perr := parseRef(ref)
	if perr == nil {
		want := parsed.String()
		for _, rec := range md.Images {
			if slices.Contains(rec.RepoTags, want) || slices.Contains(rec.RepoDigests, want) {
				return rec, nil
			}
		}
	}
	if rec := md.byIDPrefix(ref); rec != nil {
		return rec, nil
	}
	if isHex(strings.TrimPrefix(ref, "sha256:")) {
		return nil, nil // an image ID (not a valid name) of an absent image
	}
	return nil, perr
}

func isHex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789abcdef") == ""
}

func (md *metadata) byID(ref string) *imageRecord {
	if rec, ok := md.Images[ref]; ok {
		return rec
	}
	if rec, ok := md.Images["sha256:"+ref]; ok {
		return rec
	}
	return nil
}

// byIDPrefix finds the one image whose ID hex starts with prefix, as
// crictl's truncated IDs need; ambiguous or too-short prefixes match nothing.
func (md *metadata) byIDPrefix(prefix string) *imageRecord {
	prefix = strings.TrimPrefix(prefix, "sha256:")
	if len(prefix) < 4 || !isHex(prefix) {
		return nil
	}
	var found *imageRecord
	for id, rec := range md.Images {
		if strings.HasPrefix(strings.TrimPrefix(id, "sha256:"), prefix) {
			if found != nil {
				return nil
			}
			found = rec
		}
	}
	return found
}

// addImage records rec under ref: the tag moves to rec from any image that
// had it (that image stays, reachable by ID and digest, as in containerd),
// and rec's tags and digests merge with an existing record of the same ID.
func (md *metadata) addImage(rec *imageRecord, ref parsedRef) {
	if ref.tagged != nil {
		name := ref.String()
		for id, other := range md.Images {
			if id != rec.ID {
				other.RepoTags = slices.DeleteFunc(other.RepoTags, func(t string) bool { return t == name })
			}
		}
	}
	if existing, ok := md.Images[rec.ID]; ok {
		rec.RepoTags = mergeSorted(existing.RepoTags, rec.RepoTags)
		rec.RepoDigests = mergeSorted(existing.RepoDigests, rec.RepoDigests)
	}
	md.Images[rec.ID] = rec
}

func mergeSorted(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// notFound is the gRPC error for an image reference that matches nothing.
func notFound(ref string) error {
	return status.Errorf(codes.NotFound, "image %q not found", ref)
}
