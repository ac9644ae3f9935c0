package runtime

import (
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/berth/berth/internal/testkit/hostcheck"
)

func TestSocketPath(t *testing.T) {
	if p, err := socketPath("unix:///run/x.sock"); err != nil || p != "/run/x.sock" {
		t.Fatalf("got %q, %v", p, err)
	}
	for _, bad := range []string{"/run/x.sock", "tcp://127.0.0.1:1", "unix://relative.sock", ""} {
		if _, err := socketPath(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestListenUnix(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root) // chown to root's group
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "cri.sock")

	lis, err := listenUnix(path, "")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o660 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode %v, %v", fi.Mode(), err)
	}
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := listenUnix(path, ""); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second listener on a live socket: %v", err)
	}
	lis.Close()

	// A stale socket: the file stays behind when its owner dies.
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	lis, err = listenUnix(stale, "")
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	lis.Close()

	plain := filepath.Join(dir, "file")
	if err := os.WriteFile(plain, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := listenUnix(plain, ""); err == nil {
		t.Fatal("a regular file was replaced by the socket")
	}
	if data, _ := os.ReadFile(plain); string(data) != "keep" {
		t.Fatal("regular file changed")
	}
	if _, err := listenUnix(filepath.Join(dir, "g.sock"), "no-such-group-berth"); err == nil {
		t.Fatal("unknown group accepted")
	}
}

func TestListenUnixSocketGroup(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	g, err := user.LookupGroup("daemon") // present on every Debian system
	if err != nil {
		t.Fatalf("look up group daemon: %v", err)
	}
	path := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := listenUnix(path, "daemon")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if strconv.Itoa(int(st.Gid)) != g.Gid || st.Uid != 0 || fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket owner %d:%d mode %v, want 0:%s 0660", st.Uid, st.Gid, fi.Mode().Perm(), g.Gid)
	}
}
