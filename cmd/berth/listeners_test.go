package main

import (
	"testing"

	"github.com/berth/berth/internal/testkit/procnet"
)

// The server process listens on its API port and nothing else: the
// embedded etcd has no client, peer or metrics listener.
func TestServerListensOnlyOnItsAPIPort(t *testing.T) {
	dataDir := t.TempDir() + "/data"
	port := freePort(t)
	srv := startServer(t, buildBerth(t), dataDir, port)
	srv.client(t)
	got, err := procnet.Listening(srv.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	want := "tcp 0100007F" + procnet.TCPPort(port) // 127.0.0.1:port
	if len(got) != 1 || got[0] != want {
		t.Fatalf("berth server listens on %v; want only %s", got, want)
	}
}
