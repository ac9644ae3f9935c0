package procnet

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Listening sees a TCP and a unix listener this process opens, and stops
// seeing them once closed: the checks built on it can fail.
func TestListeningSeesListeners(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	unix, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Listening(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	port := TCPPort(tcp.Addr().(*net.TCPAddr).Port)
	hasTCP := slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "tcp ") && strings.HasSuffix(s, port) })
	if !hasTCP || !slices.Contains(got, "unix "+sock) {
		t.Fatalf("Listening = %v; want tcp ...%s and unix %s", got, port, sock)
	}
	tcp.Close()
	unix.Close()
	got, err = Listening(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("after closing: %v", got)
	}
}
