package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
)

func TestForEachPodVisitsEveryIndexOnceAndCountsFailures(t *testing.T) {
	clients := make([]kubernetes.Interface, 3)
	var mu sync.Mutex
	seen := map[int]int{}
	boom := errors.New("boom")
	p := forEachPod(context.Background(), clients, 20, func(_ context.Context, _ kubernetes.Interface, i int) error {
		mu.Lock()
		seen[i]++
		mu.Unlock()
		if i%5 == 0 {
			return boom
		}
		return nil
	})
	for i := range 20 {
		if seen[i] != 1 {
			t.Errorf("index %d visited %d times", i, seen[i])
		}
	}
	if p.ok != 16 || p.failed != 4 || !errors.Is(p.firstErr, boom) {
		t.Errorf("phase = %+v, want 16 ok, 4 failed, boom", p)
	}
	log := slog.New(slog.DiscardHandler)
	if err := p.check("create", log); !errors.Is(err, boom) {
		t.Errorf("20%% failed: check = %v, want an error wrapping boom", err)
	}
	if err := (phase{ok: 19, failed: 1, firstErr: boom}).check("create", log); err != nil {
		t.Errorf("5%% failed: check = %v, want the run to go on", err)
	}
}
