// Package keyedlock gives callers one key at a time while different keys
// go on in parallel: the runtime serialises lifecycle calls on one
// container or sandbox, the API server its accounting writes for one node.
//
// Written here rather than borrowed: k8s.io/utils/keymutex hashes keys onto
// a fixed set of mutexes (unrelated keys would wait for each other) and
// cannot stop waiting when the caller's context ends.
package keyedlock

import (
	"context"
	"sync"
)

// Locks holds one lock per key, made on first use and dropped when no one
// holds or waits for it. The zero value is ready to use; a Locks must not
// be copied after first use.
type Locks struct {
	mu   sync.Mutex
	keys map[string]*entry // only keys with a holder or a waiter
}

type entry struct {
	// token holds a value while someone holds the key. Blocked senders on
	// a channel are queued in order, so waiters are served first come,
	// first served, and one waiting on a context can leave the queue.
	token chan struct{}
	users int // the holder and the waiters; the entry goes when none remain
}

// Lock waits until key is the caller's and returns the func that releases
// it.
func (l *Locks) Lock(key string) (unlock func()) {
	unlock, _ = l.LockContext(context.Background(), key) // Background never ends: no error
	return unlock
}

// LockContext waits until key is the caller's, or until ctx ends: then it
// returns ctx's error and the caller holds nothing. A caller holding two
// keys at once must take them in one agreed order, or it can deadlock with
// another taking them in the other.
func (l *Locks) LockContext(ctx context.Context, key string) (unlock func(), err error) {
	e := l.join(key)
	select {
	case e.token <- struct{}{}:
		return func() { <-e.token; l.leave(key, e) }, nil
	case <-ctx.Done():
		l.leave(key, e)
		return nil, ctx.Err()
	}
}

// Users is how many callers hold or wait for key (tests use it to know a
// waiter is queued).
func (l *Locks) Users(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.keys[key]; ok {
		return e.users
	}
	return 0
}

// Len is how many keys have a holder or a waiter (tests use it to show
// entries do not outlive their use).
func (l *Locks) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

func (l *Locks) join(key string) *entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = map[string]*entry{}
	}
	e, ok := l.keys[key]
	if !ok {
		e = &entry{token: make(chan struct{}, 1)}
		l.keys[key] = e
	}
	e.users++
	return e
}

func (l *Locks) leave(key string, e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.users--; e.users == 0 {
		delete(l.keys, key)
	}
}
