package differential

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/cluster"
)

// startBerth runs berth server in the test's process with no local agent
// and no scheduler (kube-apiserver alone binds no pod either), storing in
// etcd (as --etcd-servers does), and returns a client configuration for its
// admin.
func startBerth(t *testing.T, etcd *etcdMember) *rest.Config {
	t.Helper()
	srv := cluster.InProcess(t, "", func(ctx context.Context, dataDir string, port int) error {
		return server.Run(ctx, server.Config{
			DataDir: dataDir, BindAddress: "127.0.0.1", Port: port, DisableAgent: true, DisableScheduler: true,
			EtcdServers: []string{etcd.Endpoint}, EtcdCAFile: etcd.CAFile, EtcdCertFile: etcd.CertFile, EtcdKeyFile: etcd.KeyFile,
			Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// testWriter sends the server's warnings to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
