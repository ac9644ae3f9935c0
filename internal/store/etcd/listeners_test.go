package etcd_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/berth/berth/internal/store/etcd"
	"github.com/berth/berth/internal/testkit/procnet"
)

// listeningSockets returns the listening sockets this process holds. The
// two tests that count them stay serial: Go runs serial tests before it
// resumes any parallel one, so no other test's member or TLS listener opens
// a socket while they count.
func listeningSockets(t *testing.T) []string {
	t.Helper()
	out, err := procnet.Listening(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestListeningSocketsSeesAListener proves the check below can fail.
func TestListeningSocketsSeesAListener(t *testing.T) {
	before := len(listeningSockets(t))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if after := len(listeningSockets(t)); after != before+1 {
		t.Fatalf("listening sockets went %d -> %d after opening one", before, after)
	}
}

func TestEmbeddedOpensNoListeningSocket(t *testing.T) {
	before := listeningSockets(t)
	s, err := etcd.Embedded(context.Background(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Create(context.Background(), "/probe", []byte("x")); err != nil {
		t.Fatalf("embedded store unusable: %v", err)
	}
	after := listeningSockets(t)
	if len(after) != len(before) {
		t.Fatalf("embedded etcd opened listening sockets: before %v, after %v", before, after)
	}
}

func TestEmbeddedDataDirIsPrivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := etcd.Embedded(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Fatalf("etcd data dir mode %o, want 700", perm)
	}
}

func TestEmbeddedRefusesADataDirInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := etcd.Embedded(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s2, err := etcd.Embedded(context.Background(), dir, nil); err == nil {
		s2.Close()
		t.Fatal("a second member opened a data dir in use")
	} else if !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second member: %v, want an in-use error", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s3, err := etcd.Embedded(context.Background(), dir, nil)
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	s3.Close()
}
