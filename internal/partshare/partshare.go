// Package partshare lets long-lived decoded objects share the parts they
// have in common.
//
// The pods of one template carry equal containers, tolerations and security
// contexts, yet every decode gives each pod its own copy: for a pod with one
// container that is ~40% of its decoded size, held for as long as the watch
// cache holds the pod. Objects served from the cache are read-only by
// contract (ReadView and the local readers say so), so equal parts can be one
// value. Nothing in k8s.io/apimachinery does this (kube-apiserver's cache
// keeps every copy), hence this small package.
//
// Parts are keyed by the SHA-256 of their protobuf encoding, which the
// generated marshallers make deterministic (map keys sorted), so equal keys
// mean equal parts, as content addresses do in git and OCI registries. A key
// is 32 bytes however large the part: a ConfigMap's last-applied annotation
// may be a megabyte.
package partshare

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"sync"
)

// Marshaler is what the generated protobuf types of k8s.io/api implement.
type Marshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// Table records parts of one type by their encoding. It holds at most max
// of them strongly: when full it starts over, so parts already shared stay
// shared and at most max parts outlive the objects that used them.
type Table[V any] struct {
	mu    sync.Mutex
	max   int
	parts map[[sha256.Size]byte]V
	key   []byte   // reused encoding buffer, under mu
	names []string // reused for a map's sorted keys, under mu
}

// maxKeptBuffer is the largest encoding buffer a table keeps for the next
// part; a larger one (a huge annotation) is dropped after use.
const maxKeptBuffer = 64 << 10

// NewTable returns a table holding at most max parts.
func NewTable[V any](max int) *Table[V] {
	return &Table[V]{max: max, parts: make(map[[sha256.Size]byte]V)}
}

// Len is the number of parts recorded.
func (t *Table[V]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.parts)
}

// share returns the part recorded under the key encode writes into t.key,
// or records v under it; v as it is if encode fails.
func (t *Table[V]) share(v V, encode func() bool) V {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.key = t.key[:0]
	ok := encode()
	sum := sha256.Sum256(t.key)
	if cap(t.key) > maxKeptBuffer {
		t.key = nil
	}
	if !ok {
		return v
	}
	if shared, ok := t.parts[sum]; ok {
		return shared
	}
	if len(t.parts) >= t.max {
		clear(t.parts)
	}
	t.parts[sum] = v
	return v
}

// appendEncoding appends m's encoding, length-prefixed so that a list's
// key tells its elements apart.
func (t *Table[V]) appendEncoding(m Marshaler) bool {
	n := m.Size()
	t.key = binary.AppendUvarint(t.key, uint64(n))
	start := len(t.key)
	t.key = append(t.key, make([]byte, n)...)
	_, err := m.MarshalToSizedBuffer(t.key[start:])
	return err == nil
}

// Slice returns a slice equal to s that other callers may hold too. Its
// capacity is its length, so an append by any holder copies instead of
// writing where another holder's elements could be.
func Slice[E any, P interface {
	*E
	Marshaler
}](t *Table[[]E], s []E) []E {
	if len(s) == 0 {
		return s
	}
	return t.share(s[:len(s):len(s)], func() bool {
		for i := range s {
			if !t.appendEncoding(P(&s[i])) {
				return false
			}
		}
		return true
	})
}

// Pointer returns a pointer to a value equal to *p that other callers may
// hold too; nil stays nil.
func Pointer[E any, P interface {
	*E
	Marshaler
}](t *Table[*E], p *E) *E {
	if p == nil {
		return nil
	}
	return t.share(p, func() bool { return t.appendEncoding(P(p)) })
}

// Map returns a map equal to m that other callers may hold too (labels and
// annotations); nil and empty maps stay as they are.
func Map(t *Table[map[string]string], m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	return t.share(m, func() bool {
		t.names = t.names[:0]
		for name := range m {
			t.names = append(t.names, name)
		}
		slices.Sort(t.names)
		for _, name := range t.names {
			t.key = appendString(t.key, name)
			t.key = appendString(t.key, m[name])
		}
		clear(t.names) // hold no strings of maps gone since
		return true
	})
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}
