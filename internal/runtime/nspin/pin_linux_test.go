package nspin

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/usernstest"
)

// hostnameIn reads the hostname seen inside the UTS namespace at path.
func hostnameIn(t *testing.T, path string) string {
	t.Helper()
	var u unix.Utsname
	if err := Enter(path, UTS, func() error { return unix.Uname(&u) }); err != nil {
		t.Fatalf("hostname in %s: %v", path, err)
	}
	return unix.ByteSliceToString(u.Nodename[:])
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func pinPaths(dir, name string) map[Type]string {
	return map[Type]string{
		Net: filepath.Join(dir, "net", name),
		UTS: filepath.Join(dir, "uts", name),
		IPC: filepath.Join(dir, "ipc", name),
	}
}

// TestPinCreatesNamespacesWithHostname: one Pin makes a new network, UTS
// and IPC namespace, each a mounted nsfs file distinct from the test's
// own; the hostname is set inside the UTS one only; Unpin removes them
// and may be repeated.
func TestPinCreatesNamespacesWithHostname(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	paths := pinPaths(t.TempDir(), "pod-a")
	if err := Pin(paths, "pod-a-host"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unpinAll(paths) }) // also when an assertion fails
	for typ, p := range paths {
		if !IsPinned(p) {
			t.Fatalf("%s namespace %s is not pinned", typ, p)
		}
		if own := inode(t, "/proc/self/ns/"+string(typ)); inode(t, p) == own {
			t.Fatalf("%s namespace %s is the test's own", typ, p)
		}
	}
	if got := hostnameIn(t, paths[UTS]); got != "pod-a-host" {
		t.Fatalf("hostname inside the pinned UTS namespace = %q, want pod-a-host", got)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if host == "pod-a-host" {
		t.Fatal("the host's hostname was changed")
	}
	for typ, p := range paths {
		for range 2 {
			if err := Unpin(p); err != nil {
				t.Fatalf("unpin %s: %v", typ, err)
			}
		}
		if IsPinned(p) {
			t.Fatalf("%s still pinned after Unpin", p)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s still exists after Unpin: %v", p, err)
		}
	}
}

// TestPinTwiceGivesDistinctNamespaces: two pods' namespaces are not shared.
func TestPinTwiceGivesDistinctNamespaces(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	dir := t.TempDir()
	a, b := pinPaths(dir, "a"), pinPaths(dir, "b")
	for _, paths := range []map[Type]string{a, b} {
		if err := Pin(paths, ""); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unpinAll(paths) })
	}
	for _, typ := range Types() {
		if inode(t, a[typ]) == inode(t, b[typ]) {
			t.Fatalf("both pins share one %s namespace", typ)
		}
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if got := hostnameIn(t, a[UTS]); got != host {
		t.Fatalf("without a hostname the new UTS namespace has %q, want the host's %q", got, host)
	}
}

// TestPinRejectsBadInputAndLeavesNothing: an existing path is never
// overmounted or removed, and invalid requests create no file.
func TestPinRejectsBadInputAndLeavesNothing(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	if err := os.WriteFile(existing, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh")
	cases := map[string]struct {
		paths    map[Type]string
		hostname string
	}{
		"existing path":        {map[Type]string{Net: fresh, IPC: existing}, ""},
		"unknown type":         {map[Type]string{Net: fresh, "mnt": filepath.Join(dir, "mnt")}, ""},
		"relative path":        {map[Type]string{Net: "relative"}, ""},
		"hostname without uts": {map[Type]string{Net: fresh}, "h"},
		"no namespaces":        {nil, ""},
		"hostname too long":    {map[Type]string{UTS: fresh}, string(make([]byte, 100))},
	}
	for name, c := range cases {
		if err := Pin(c.paths, c.hostname); err == nil {
			t.Fatalf("%s: Pin succeeded", name)
		}
		if _, err := os.Stat(fresh); !os.IsNotExist(err) {
			t.Fatalf("%s: %s left behind (%v)", name, fresh, err)
		}
	}
	if data, err := os.ReadFile(existing); err != nil || string(data) != "keep" || IsPinned(existing) {
		t.Fatalf("the existing file was touched: %q, %v", data, err)
	}
}

// TestPinLeavesTheProcessInItsNamespaces: whichever OS thread Go picks for
// a pin (the main one included, which Go cannot discard but only wedge),
// the process's own namespaces, as /proc/self/ns shows them, never change.
func TestPinLeavesTheProcessInItsNamespaces(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	own := map[Type]uint64{}
	for _, typ := range Types() {
		own[typ] = inode(t, "/proc/self/ns/"+string(typ))
	}
	dir := t.TempDir()
	for i := range 50 {
		paths := pinPaths(dir, fmt.Sprint(i))
		if err := Pin(paths, "h"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unpinAll(paths) })
		for _, p := range paths {
			if err := Unpin(p); err != nil {
				t.Fatal(err)
			}
		}
		for _, typ := range Types() {
			if got := inode(t, "/proc/self/ns/"+string(typ)); got != own[typ] {
				t.Fatalf("after pin %d the process's %s namespace is %d, was %d", i, typ, got, own[typ])
			}
		}
	}
	if host, err := os.Hostname(); err != nil || host == "h" {
		t.Fatalf("the process's hostname became %q (%v)", host, err)
	}
}

// TestRestoreReturnsTheThreadToItsNamespaces: what onNewThread relies on
// to hand a thread back to Go. A thread that unshared every type is, after
// restore, in exactly the namespaces it started in.
func TestRestoreReturnsTheThreadToItsNamespaces(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // unlocked only once the thread is back home
		errc <- unshareAndRestore()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func unshareAndRestore() error {
	own := threadNamespaces()
	restore, err := saveNamespaces(Types())
	if err != nil {
		return err
	}
	if err := unix.Unshare(unix.CLONE_NEWNET | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC); err != nil {
		return err
	}
	for typ, ino := range threadNamespaces() {
		if ino == own[typ] {
			return fmt.Errorf("unshare left the thread in its %s namespace", typ)
		}
	}
	if err := restore(); err != nil {
		return err
	}
	for typ, ino := range threadNamespaces() {
		if ino != own[typ] {
			return fmt.Errorf("after restore the thread's %s namespace is %d, was %d", typ, ino, own[typ])
		}
	}
	runtime.UnlockOSThread()
	return nil
}

// threadNamespaces is the calling thread's namespace inodes by type (0 if unreadable).
func threadNamespaces() map[Type]uint64 {
	out := map[Type]uint64{}
	for _, typ := range Types() {
		var st unix.Stat_t
		if unix.Stat("/proc/thread-self/ns/"+string(typ), &st) == nil {
			out[typ] = st.Ino
		}
	}
	return out
}

func unpinAll(paths map[Type]string) {
	for _, p := range paths {
		_ = Unpin(p)
	}
}

// TestPinnedNetworkNamespaceHasLoopbackUp: a pod's network namespace comes
// with lo up, so 127.0.0.1 answers inside it without any CNI plugin.
func TestPinnedNetworkNamespaceHasLoopbackUp(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	path := filepath.Join(t.TempDir(), "net", "pod-lo")
	if err := Pin(map[Type]string{Net: path}, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Unpin(path) })
	err := Enter(path, Net, func() error {
		ifr, err := unix.NewIfreq("lo")
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
			return err
		}
		if ifr.Uint16()&unix.IFF_UP == 0 {
			return fmt.Errorf("lo flags %#x: not up", ifr.Uint16())
		}
		// A datagram to 127.0.0.1 reaches a socket bound there only if
		// lo is up (connect fails with ENETUNREACH otherwise).
		l, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		c, err := net.Dial("udp4", l.LocalAddr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		_ = l.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := l.ReadFrom(buf)
		if err != nil || string(buf[:n]) != "ping" {
			return fmt.Errorf("read on 127.0.0.1: %q, %v", buf[:n], err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("loopback in the pinned namespace: %v", err)
	}
}

// TestPinProcessKeepsAUserNamespaceAndTheOnesItOwns: the namespaces a
// process was born in (a user namespace and network, UTS and IPC ones it
// owns, as a user-namespaced pod's pause process makes them) stay pinned
// after it exits; Configure sets the hostname and brings lo up in them.
func TestPinProcessKeepsAUserNamespaceAndTheOnesItOwns(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root)
	pid := usernstest.Start(t, 300000, unix.CLONE_NEWNET|unix.CLONE_NEWUTS|unix.CLONE_NEWIPC)
	paths := pinPaths(t.TempDir(), "pod-u")
	paths[User] = filepath.Join(filepath.Dir(filepath.Dir(paths[Net])), "user", "pod-u")
	err := PinProcess(pid, paths)
	born := map[Type]uint64{}
	for typ := range paths {
		born[typ] = inode(t, fmt.Sprintf("/proc/%d/ns/%s", pid, typ))
	}
	_ = syscall.Kill(pid, syscall.SIGKILL) // the pins outlive it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unpinAll(paths) })
	for typ, p := range paths {
		if !IsPinned(p) || inode(t, p) != born[typ] {
			t.Errorf("%s namespace %s: pinned %v, inode %d, want the process's %d", typ, p, IsPinned(p), inode(t, p), born[typ])
		}
	}
	if err := Configure(paths[Net], paths[UTS], "pod-u-host"); err != nil {
		t.Fatal(err)
	}
	if got := hostnameIn(t, paths[UTS]); got != "pod-u-host" {
		t.Errorf("hostname %q, want pod-u-host", got)
	}
	err = Enter(paths[Net], Net, func() error {
		iface, err := net.InterfaceByName("lo")
		if err != nil {
			return err
		}
		if iface.Flags&net.FlagUp == 0 {
			return fmt.Errorf("lo is down: %v", iface.Flags)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	// A second pin of the same paths is refused, never mounted over.
	if err := PinProcess(os.Getpid(), paths); err == nil {
		t.Error("PinProcess over pinned namespaces succeeded")
	}
}
