package etcd_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth/berth/internal/store/etcd"
)

// listeningSockets returns descriptions of the sockets this process holds
// that accept connections: TCP (v4/v6) in LISTEN state and listening unix sockets.
func listeningSockets(t *testing.T) []string {
	t.Helper()
	mine := socketInodes(t)
	var out []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, f := range readTable(t, table) {
			// fields: sl local_address rem_address st ... inode is field 9; st 0A = LISTEN
			if len(f) > 9 && f[3] == "0A" && mine[f[9]] {
				out = append(out, fmt.Sprintf("%s %s", filepath.Base(table), f[1]))
			}
		}
	}
	for _, f := range readTable(t, "/proc/net/unix") {
		// fields: Num RefCount Protocol Flags Type St Inode [Path]; flag 00010000 = listening
		if len(f) > 6 && f[3] == "00010000" && mine[f[6]] {
			out = append(out, "unix "+strings.Join(f[7:], " "))
		}
	}
	return out
}

func socketInodes(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("read fds: %v", err)
	}
	inodes := map[string]bool{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	return inodes
}

func readTable(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil // e.g. no IPv6 in this kernel
	}
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		rows = append(rows, strings.Fields(sc.Text()))
	}
	return rows
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
