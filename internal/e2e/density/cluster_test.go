package density

import (
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/agent/cri"
	"github.com/berth/berth/internal/testkit/cluster"
)

// nodeName is the local node of the test's `berth server`.
const nodeName = "density-node"

// testCluster is one `berth server` with its local runtime and agent, its
// images served by an in-process registry on loopback
// (internal/testkit/cluster, which removes every pod and sandbox left
// before the server stops: containers outlive the server by design).
type testCluster struct {
	*cluster.Server
	client *kubernetes.Clientset
}

// startCluster starts the server and waits until its node is Ready.
func startCluster(t *testing.T) *testCluster {
	t.Helper()
	// kubectl's own --timeout (waitLimit) bounds its runs.
	srv := cluster.Start(t, berthBin, cluster.Options{LocalNode: nodeName, KubectlTimeout: 16 * time.Minute})
	cfg := srv.RESTConfig(t)
	// Creating and listing 100 pods is not meant to wait on client-go's
	// default rate limit (5 requests/s).
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &testCluster{Server: srv, client: cs}
}

// runtimeClient connects to the local runtime's CRI socket, closed at clean-up.
func (c *testCluster) runtimeClient(t *testing.T) *cri.Client {
	t.Helper()
	client, _, err := cri.Dial(t.Context(), c.RuntimeEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}
