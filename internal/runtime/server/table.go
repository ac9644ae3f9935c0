package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berth/berth/internal/atomicfile"
	"github.com/berth/berth/internal/dirperm"
)

// table holds one kind of object (sandboxes or containers) in memory and
// persists each as dir/<id>.json, written temp-then-rename, so a restart
// finds every object as it last was. Names are reserved before the object is
// built, so two concurrent creates of one name cannot both succeed.
type table[T any] struct {
	kind string // "sandbox" or "container", for messages
	dir  string

	mu    sync.RWMutex
	items map[string]*T
	names map[string]string // name key -> id
}

func newTable[T any](kind, dir string) (*table[T], error) {
	// Traversable, so that a user-namespaced pod's root reaches its
	// sandbox's files (the sandbox dir lives here); records are 0600.
	if err := dirperm.MakeTraversable(dir); err != nil {
		return nil, fmt.Errorf("%s state dir: %w", kind, err)
	}
	return &table[T]{kind: kind, dir: dir, items: map[string]*T{}, names: map[string]string{}}, nil
}

// reserveName claims name for id, or says which object already holds it.
func (t *table[T]) reserveName(name, id string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if owner, ok := t.names[name]; ok && owner != id {
		return status.Errorf(codes.AlreadyExists, "%s name %q is reserved for %s", t.kind, name, owner)
	}
	t.names[name] = id
	return nil
}

func (t *table[T]) releaseName(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.names, name)
}

// put persists v durably and makes it visible.
func (t *table[T]) put(id string, v *T) error {
	if err := t.persist(id, v); err != nil {
		return err
	}
	t.mu.Lock()
	t.items[id] = v
	t.mu.Unlock()
	return nil
}

// writeFunc replaces a record's file: atomicfile.WriteFile or Replace.
type writeFunc func(path string, data []byte, mode os.FileMode) error

// persist writes v's record durably.
func (t *table[T]) persist(id string, v *T) error { return t.persistWith(id, v, atomicfile.WriteFile) }

func (t *table[T]) persistWith(id string, v *T, write writeFunc) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", t.kind, id, err)
	}
	if err := write(filepath.Join(t.dir, id+".json"), data, 0o600); err != nil {
		return fmt.Errorf("persist %s %s: %w", t.kind, id, err)
	}
	return nil
}

// get returns a copy of the object with the given ID or unique ID prefix
// (crictl passes truncated IDs), or a NotFound status.
func (t *table[T]) get(idOrPrefix string) (T, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	id, err := t.resolveLocked(idOrPrefix)
	if err != nil {
		var zero T
		return zero, err
	}
	return *t.items[id], nil
}

func (t *table[T]) resolveLocked(idOrPrefix string) (string, error) {
	if idOrPrefix == "" {
		return "", status.Errorf(codes.InvalidArgument, "%s ID is required", t.kind)
	}
	if _, ok := t.items[idOrPrefix]; ok {
		return idOrPrefix, nil
	}
	var match string
	for id := range t.items {
		if strings.HasPrefix(id, idOrPrefix) {
			if match != "" {
				return "", status.Errorf(codes.InvalidArgument, "%s ID prefix %q is ambiguous", t.kind, idOrPrefix)
			}
			match = id
		}
	}
	if match == "" {
		return "", status.Errorf(codes.NotFound, "%s %q not found", t.kind, idOrPrefix)
	}
	return match, nil
}

// update applies fn to the stored object and persists the result durably.
func (t *table[T]) update(id string, fn func(*T)) (T, error) {
	return t.apply(id, fn, atomicfile.WriteFile)
}

// updateProcessState is update for a change that only says what became of
// the object's process (it started, it exited): the record is replaced
// atomically but not synced to disk. A crash of the runtime keeps it (the
// kernel has it); a crash of the machine may lose it, but also ends the
// process it describes, and recovery then finds the monitor gone and
// reports the process exited either way. Not waiting for the journal takes
// milliseconds off StartContainer, whose sync came right after runc's and
// the container's own writes to the same filesystem.
func (t *table[T]) updateProcessState(id string, fn func(*T)) (T, error) {
	return t.apply(id, fn, atomicfile.Replace)
}

func (t *table[T]) apply(id string, fn func(*T), write writeFunc) (T, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur, ok := t.items[id]
	if !ok {
		var zero T
		return zero, status.Errorf(codes.NotFound, "%s %q not found", t.kind, id)
	}
	next := *cur
	fn(&next)
	if err := t.persistWith(id, &next, write); err != nil {
		return *cur, err
	}
	t.items[id] = &next
	return next, nil
}

// remove forgets the object, its name and its state file.
func (t *table[T]) remove(id, name string) error {
	if err := os.Remove(filepath.Join(t.dir, id+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s %s state: %w", t.kind, id, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.items, id)
	if t.names[name] == id {
		delete(t.names, name)
	}
	return nil
}

// list returns copies of every object, ordered by ID for stable output.
func (t *table[T]) list() []T {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ids := make([]string, 0, len(t.items))
	for id := range t.items {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]T, 0, len(ids))
	for _, id := range ids {
		out = append(out, *t.items[id])
	}
	return out
}

// load reads every persisted object; a file that cannot be decoded is
// reported to bad and skipped, never failing the load.
func (t *table[T]) load(bad func(file string, err error)) ([]*T, error) {
	entries, err := os.ReadDir(t.dir)
	if err != nil {
		return nil, fmt.Errorf("read %s state dir: %w", t.kind, err)
	}
	var out []*T
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") {
			continue
		}
		path := filepath.Join(t.dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			bad(path, err)
			continue
		}
		v := new(T)
		if err := json.Unmarshal(data, v); err != nil {
			bad(path, err)
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// restore makes a loaded object visible again under its name.
func (t *table[T]) restore(id, name string, v *T) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.items[id] = v
	t.names[name] = id
}
