package apiserver

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	svmv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/controller/garbagecollector"
	"github.com/berth/berth/internal/controller/storageversionmigrator"
	"github.com/berth/berth/internal/informeropts"
	"github.com/berth/berth/internal/testkit/svmtest"
)

// adminClients acts as the test server's admin under every controller name.
type adminClients struct{ s *testServer }

func (c adminClients) Config(string) (*rest.Config, error)         { return rest.CopyConfig(c.s.config), nil }
func (c adminClients) Client(string) (kubernetes.Interface, error) { return c.s.jsonCli, nil }

// startStorageVersionMigrator runs upstream's migrator on gc's monitors
// against s until the test ends.
func startStorageVersionMigrator(t *testing.T, s *testServer, gc *garbagecollector.Controller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := storageversionmigrator.Config{
		ControllerConfig: informeropts.ControllerConfig{Client: s.jsonCli, Clients: adminClients{s},
			Logger: slog.New(slog.NewTextHandler(testLogWriter{t}, nil))},
		GraphBuilder: gc.GraphBuilder(), Mapper: gc.Mapper(),
	}
	go func() { done <- storageversionmigrator.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("storage version migrator: %v", err)
		}
	})
}

func TestStorageVersionMigrationOfSecretsSucceeds(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	secrets := s.jsonCli.CoreV1().Secrets("default")
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stored"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	startStorageVersionMigrator(t, s, startGarbageCollector(t, s))

	migrations := s.jsonCli.StoragemigrationV1().StorageVersionMigrations()
	if _, err := migrations.Create(ctx, &svmv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "secrets"},
		Spec: svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Resource: "secrets"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create migration: %v", err)
	}
	svmtest.Started(t, migrations, "secrets")
	// The migrator runs once the collector's secrets monitor has seen that
	// resourceVersion: a later write to a secret shows it at once, where
	// otherwise the watch cache's next bookmark, within a minute, would.
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	svmtest.Succeeds(t, migrations, "secrets", time.Minute)
}
