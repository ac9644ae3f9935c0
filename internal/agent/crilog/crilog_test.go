package crilog

import (
	"bytes"
	"context"
	"fmt"
	"github.com/berth/berth/internal/testkit/testio"
	"github.com/berth/berth/internal/testkit/wait"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const sampleLog = `2026-11-30T01:00:00.000000001Z stdout F first
2026-11-30T01:00:01.000000000Z stderr P par
2026-11-30T01:00:01.500000000Z stderr F tial
2026-11-30T01:00:02.000000000Z stdout F third
`

func readLog(t *testing.T, path string, opts LogOptions) string {
	t.Helper()
	var out bytes.Buffer
	if err := ReadLog(context.Background(), path, &out, opts); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestReadLogFormats(t *testing.T) {
	p := testio.WriteFile(t, "0.log", sampleLog)
	two, zero, limit := int64(2), int64(0), int64(8)
	for _, tc := range []struct {
		name string
		opts LogOptions
		want string
	}{
		{"all", LogOptions{}, "first\npartial\nthird\n"},
		{"timestamps", LogOptions{Timestamps: true},
			"2026-11-30T01:00:00.000000001Z first\n2026-11-30T01:00:01Z partial\n2026-11-30T01:00:02Z third\n"},
		{"tail counts a partial line once", LogOptions{TailLines: &two}, "partial\nthird\n"},
		{"tail zero", LogOptions{TailLines: &zero}, ""},
		{"since", LogOptions{Since: time.Date(2026, 11, 30, 1, 0, 1, 750_000_000, time.UTC)}, "third\n"},
		{"limitBytes", LogOptions{LimitBytes: &limit}, "first\npa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readLog(t, p, tc.opts); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReadLogRejectsMalformedLines(t *testing.T) {
	for _, line := range []string{"garbage\n", "notatime stdout F x\n", "2026-11-30T01:00:00Z stdin F x\n", "2026-11-30T01:00:00Z stdout X x\n"} {
		var out bytes.Buffer
		if err := ReadLog(context.Background(), testio.WriteFile(t, "0.log", line), &out, LogOptions{}); err == nil {
			t.Errorf("%q: no error", line)
		}
	}
}

// TestReadLogFollow appends while following and stops once the container
// has stopped and the file is drained.
func TestReadLogFollow(t *testing.T) {
	p := testio.WriteFile(t, "0.log", sampleLog)
	var running atomic.Bool
	running.Store(true)
	out := &testio.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- ReadLog(context.Background(), p, out, LogOptions{Follow: true, PollInterval: time.Millisecond, Running: running.Load})
	}()
	waitForLog(t, out, "third\n")
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Half a record first: the reader must wait for its end.
	if _, err := f.WriteString("2026-11-30T01:00:03Z stdout F fou"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("rth\n2026-11-30T01:00:04Z stdout F last\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	running.Store(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "first\npartial\nthird\nfourth\nlast\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestReadLogFollowEndsWithContext(t *testing.T) {
	p := testio.WriteFile(t, "0.log", sampleLog)
	ctx, cancel := context.WithCancel(context.Background())
	out := &testio.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- ReadLog(ctx, p, out, LogOptions{Follow: true, PollInterval: time.Millisecond, Running: func() bool { return true }})
	}()
	waitForLog(t, out, "third\n")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// waitForLog waits until the followed log written to out ends with suffix.
func waitForLog(t *testing.T, out *testio.SyncBuffer, suffix string) {
	t.Helper()
	wait.UntilNil(t, 30*time.Second, fmt.Sprintf("the followed log to end with %q", suffix), func() error {
		if got := out.String(); !strings.HasSuffix(got, suffix) {
			return fmt.Errorf("log so far %q", got)
		}
		return nil
	})
}

// A stopped container's log that ends mid-record ends the follow anyway.
func TestReadLogFollowStoppedWithUnterminatedRecord(t *testing.T) {
	p := testio.WriteFile(t, "0.log", "2026-11-30T01:00:00Z stdout F done\n2026-11-30T01:00:01Z stdout F cut of")
	out := readLog(t, p, LogOptions{Follow: true, PollInterval: time.Millisecond, Running: func() bool { return false }})
	if out != "done\n" {
		t.Errorf("got %q, want %q", out, "done\n")
	}
}
