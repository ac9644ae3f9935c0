package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/berth/berth/internal/store"
)

// storageMove is a prefix berth once stored a kind under and the one
// kube-apiserver uses, which berth uses now.
type storageMove struct{ from, to string }

// storageMoves are the kinds whose key changed: Nodes moved from
// /registry/nodes/ to kube-apiserver's /registry/minions/.
var storageMoves = []storageMove{{from: "/registry/nodes/", to: "/registry/minions/"}}

// moveBatch bounds one List of keys still to move; maxMovePasses bounds
// the passes, should objects keep changing under them.
const (
	moveBatch     = 500
	maxMovePasses = 1000
)

// migrateStorage moves every object found under an old prefix to its
// kind's key, one object per transaction (create the new key, delete the
// old one at the revision read), before anything reads the kind: a data
// directory written by an earlier berth starts with all its objects. A
// move interrupted by a crash leaves each object at exactly one key, and
// the next start finishes it. An object already at its new key (written
// meanwhile by a replica on this version) wins; the old copy goes.
func migrateStorage(ctx context.Context, st store.Interface, logger *slog.Logger) error {
	for _, m := range storageMoves {
		moved := 0
		// Each pass moves what it lists; an object that changed under a
		// pass is moved by the next one.
		for pass := 0; ; pass++ {
			page, err := st.List(ctx, m.from, store.ListOptions{Limit: moveBatch})
			if err != nil {
				return fmt.Errorf("listing %s: %w", m.from, err)
			}
			if len(page.KVs) == 0 {
				break
			}
			if pass == maxMovePasses {
				return fmt.Errorf("moving %s to %s: objects still under %s after %d passes", m.from, m.to, m.from, pass)
			}
			for _, kv := range page.KVs {
				if err := moveKey(ctx, st, kv, m.to+strings.TrimPrefix(kv.Key, m.from)); err != nil {
					return err
				}
				moved++
			}
		}
		if moved > 0 {
			logger.Info("moved stored objects to kube-apiserver's keys", "from", m.from, "to", m.to, "objects", moved)
		}
	}
	return nil
}

func moveKey(ctx context.Context, st store.Interface, kv store.KV, to string) error {
	_, err := st.Txn(ctx, []store.Op{{Key: to, ExpectModRevision: 0, Value: kv.Value}, {Key: kv.Key, ExpectModRevision: kv.ModRevision}})
	if !errors.Is(err, store.ErrConflict) {
		if err != nil {
			return fmt.Errorf("moving %s to %s: %w", kv.Key, to, err)
		}
		return nil
	}
	// The new key exists already, or the old one changed. The new key's
	// object wins; without one, the next pass moves the changed object.
	if _, err := st.Get(ctx, to); errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("moving %s to %s: %w", kv.Key, to, err)
	}
	if _, err := st.Delete(ctx, kv.Key, 0); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("removing %s after %s was written: %w", kv.Key, to, err)
	}
	return nil
}
