package multinode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/berth/berth/internal/runtime/network"
	testcluster "github.com/berth/berth/internal/testkit/cluster"
)

// lan is the test's network: a bridge in a namespace of its own (so the
// host's interfaces and routes are never touched) and one namespace per
// node, each joined to the bridge by a veth, with addresses from TEST-NET-1
// (192.0.2.0/24, RFC 5737: never routed anywhere).
type lan struct {
	bridgeNS string            // namespace name of the bridge; the server lives here
	nodeNS   map[string]string // node name → namespace name
	nodeIP   map[string]string // node name → address on the bridge
}

const (
	lanGateway = "192.0.2.1" // the bridge's address: API server and registry
	lanPrefix  = "/24"
)

// newLAN builds the namespaces and links; t.Cleanup deletes them all.
func newLAN(t *testing.T, nodes ...string) *lan {
	t.Helper()
	suffix := randomSuffix(t)
	l := &lan{bridgeNS: "berth-mn-" + suffix + "-br", nodeNS: map[string]string{}, nodeIP: map[string]string{}}
	created := []string{}
	t.Cleanup(func() {
		for _, ns := range created {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("ip netns del %s: %v: %s", ns, err, out)
			}
		}
	})
	addNS := func(name string) {
		ipCmd(t, "netns", "add", name)
		created = append(created, name)
		ipCmd(t, "-n", name, "link", "set", "lo", "up")
	}
	addNS(l.bridgeNS)
	ipCmd(t, "-n", l.bridgeNS, "link", "add", "br0", "type", "bridge")
	ipCmd(t, "-n", l.bridgeNS, "addr", "add", lanGateway+lanPrefix, "dev", "br0")
	ipCmd(t, "-n", l.bridgeNS, "link", "set", "br0", "up")
	for i, node := range nodes {
		ns := "berth-mn-" + suffix + "-" + node
		addNS(ns)
		port := fmt.Sprintf("p%d", i)
		ip := fmt.Sprintf("192.0.2.%d", 11+i)
		ipCmd(t, "-n", l.bridgeNS, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
		ipCmd(t, "-n", l.bridgeNS, "link", "set", port, "master", "br0", "up")
		ipCmd(t, "-n", ns, "addr", "add", ip+lanPrefix, "dev", "eth0")
		ipCmd(t, "-n", ns, "link", "set", "eth0", "up")
		l.nodeNS[node], l.nodeIP[node] = ns, ip
	}
	return l
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func ipCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// dialer opens connections from inside the namespace ns: the test process
// stays in the host's namespace and reaches the API server this way.
func dialer(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, netw, addr string) (net.Conn, error) {
		var conn net.Conn
		err := network.WithNetNS(testcluster.NetNSPath(ns), func() (err error) {
			var d net.Dialer
			conn, err = d.DialContext(ctx, netw, addr)
			return err
		})
		return conn, err
	}
}

// forward listens on addr inside namespace ns and relays every connection
// to target in the host's namespace (the in-process test registry, which
// listens on the host's loopback). It returns the bound address.
func forward(t *testing.T, ns, addr, target string) string {
	t.Helper()
	var ln net.Listener
	if err := network.WithNetNS(testcluster.NetNSPath(ns), func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Every relayed connection is closed at clean-up too, so no client's
	// idle keep-alive connection holds the test up.
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[in] = struct{}{}
			mu.Unlock()
			wg.Go(func() {
				relay(in, target)
				mu.Lock()
				delete(conns, in)
				mu.Unlock()
			})
		}
	})
	return ln.Addr().String()
}

// relay copies both ways until both sides are done; closing in ends it.
func relay(in net.Conn, target string) {
	defer in.Close()
	out, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer out.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(out, in)
		out.Close()
	}()
	io.Copy(in, out)
	in.Close()
	<-done
}
