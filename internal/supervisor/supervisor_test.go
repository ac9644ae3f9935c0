package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/testio"
	"github.com/berth/berth/internal/testkit/wait"
)

func TestRestartsAChildThatExits(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "starts")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &testio.SyncBuffer{}
	child := Child{Name: "flaky", Path: "/bin/sh", Args: []string{"-c", "echo start >> " + counter + "; exit 3"}, Output: out}
	done := make(chan struct{})
	go func() { Run(ctx, child, slog.New(slog.DiscardHandler), nil); close(done) }()
	wait.UntilNil(t, 30*time.Second, "the child to be restarted", func() error {
		data, _ := os.ReadFile(counter)
		if strings.Count(string(data), "start") < 2 {
			return fmt.Errorf("starts so far: %q", data)
		}
		return nil
	})
	cancel()
	<-done
}

func TestStopsWithSIGTERMAndSignalsReadiness(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "terminated")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	child := Child{
		Name: "server", Path: "/bin/sh",
		Args:   []string{"-c", "trap 'touch " + marker + "; exit 0' TERM; touch " + filepath.Join(dir, "up") + "; while true; do sleep 0.05; done"},
		Output: &testio.SyncBuffer{},
		Ready: func(context.Context) error {
			if _, err := os.Stat(filepath.Join(dir, "up")); err != nil {
				return errors.New("not yet")
			}
			return nil
		},
	}
	done := make(chan struct{})
	go func() { Run(ctx, child, slog.New(slog.DiscardHandler), ready); close(done) }()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("never ready")
	}
	cancel()
	<-done
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("child did not get SIGTERM: %v", err)
	}
}

func TestKillsAChildThatIgnoresSIGTERM(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	child := Child{Name: "stubborn", Path: "/bin/sh", Args: []string{"-c", "trap '' TERM; while true; do sleep 0.05; done"},
		Output: &testio.SyncBuffer{}, StopGrace: 200 * time.Millisecond}
	done := make(chan struct{})
	go func() { Run(ctx, child, slog.New(slog.DiscardHandler), nil); close(done) }()
	time.Sleep(200 * time.Millisecond) // time for the shell to start and ignore TERM before the stop
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a child ignoring SIGTERM was never killed")
	}
}
