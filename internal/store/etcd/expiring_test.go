package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/store/etcd"
	"github.com/berth/berth/internal/testkit/etcdtest"
	"github.com/berth/berth/internal/testkit/wait"
)

// awaitGone polls until key is gone; etcd revokes expired leases within a
// second or so of their expiry, and the bound only keeps a broken test from
// hanging.
func awaitGone(ctx context.Context, t *testing.T, s store.Interface, key string) {
	t.Helper()
	err := wait.Poll(ctx, 30*time.Second, key+" to expire", func(ctx context.Context) error {
		_, err := s.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err == nil {
			return errors.New("still there")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestExpiringKeysVanishWithADeleteEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := etcdtest.New(t)
	from := startRevision(t, s)
	ch := s.Watch(ctx, "/registry/events/", from)
	if _, err := s.CreateExpiring(ctx, "/registry/events/ns/short", []byte("e"), time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/registry/events/ns/kept", []byte("k")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateExpiring(ctx, "/registry/events/ns/short", []byte("again"), time.Second); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("second expiring create: %v, want ErrAlreadyExists", err)
	}
	events := nextEvents(t, ch, 3)
	if events[2].Type != store.EventDelete || events[2].KV.Key != "/registry/events/ns/short" || string(events[2].PrevValue) != "e" {
		t.Fatalf("third event %+v, want the expiring key's delete", events[2])
	}
	if _, err := s.Get(ctx, "/registry/events/ns/kept"); err != nil {
		t.Fatalf("the key without a ttl went too: %v", err)
	}
}

func TestUpdateExpiringSetsTheKeysExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := etcdtest.New(t)
	key := "/registry/events/ns/e"
	rev, err := s.Create(ctx, key, []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateExpiring(ctx, key, rev+100, []byte("stale"), time.Second); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("update at a stale revision: %v, want ErrConflict", err)
	}
	if _, err := s.UpdateExpiring(ctx, "/registry/events/ns/missing", rev, []byte("x"), time.Second); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := s.UpdateExpiring(ctx, key, rev, []byte("v2"), time.Second); err != nil {
		t.Fatal(err)
	}
	awaitGone(ctx, t, s, key)
}

func TestExpiringWritesShareALease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := etcdtest.New(t)
	for i := range 50 {
		if _, err := s.CreateExpiring(ctx, fmt.Sprintf("/registry/events/ns/e%d", i), []byte("e"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := etcd.Leases(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 {
		t.Fatalf("50 writes within a second hold %d leases, want 1", len(ids))
	}
	// An operator revokes it (its keys go with it): the next write gets a
	// new lease instead of failing on the one etcd no longer has.
	if err := etcd.Revoke(ctx, s, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateExpiring(ctx, "/registry/events/ns/after", []byte("e"), time.Hour); err != nil {
		t.Fatalf("write after the shared lease was revoked: %v", err)
	}
	if _, err := s.Get(ctx, "/registry/events/ns/after"); err != nil {
		t.Fatal(err)
	}
}

// Expiry is etcd's, so it survives the server: a key written before a
// restart still expires after it.
func TestExpiringKeysExpireAcrossARestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	s, err := etcd.Embedded(ctx, dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	key := "/registry/events/ns/e"
	if _, err := s.CreateExpiring(ctx, key, []byte("e"), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = etcd.Embedded(ctx, dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Get(ctx, key); err != nil {
		t.Fatalf("the key did not survive the restart: %v", err)
	}
	awaitGone(ctx, t, s, key)
}
