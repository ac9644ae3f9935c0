// Package svmtest waits on a StorageVersionMigration as tests of the
// storage version migrator need: until it records where it migrates up
// to, and until it succeeds.
package svmtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	svmclient "k8s.io/client-go/kubernetes/typed/storagemigration/v1"

	"github.com/berth/berth/internal/testkit/wait"
)

// Started waits up to a minute for migration name to record the
// resourceVersion it migrates up to. The migrator then waits for the
// garbage collector's monitor of the resource to reach it: a write to the
// resource after this returns lets it go on at once.
func Started(t testing.TB, migrations svmclient.StorageVersionMigrationInterface, name string) {
	t.Helper()
	wait.UntilTrue(t, time.Minute, fmt.Sprintf("migration %s to record the resourceVersion it migrates up to", name),
		func(ctx context.Context) (bool, error) {
			m, err := migrations.Get(ctx, name, metav1.GetOptions{})
			return err == nil && m.Status.ResourceVersion != "", err
		})
}

// Succeeds waits up to timeout for migration name to succeed, and fails
// the test as soon as the migration fails.
func Succeeds(t testing.TB, migrations svmclient.StorageVersionMigrationInterface, name string, timeout time.Duration) {
	t.Helper()
	wait.UntilCtx(t, timeout, fmt.Sprintf("migration %s to succeed", name), func(ctx context.Context) error {
		m, err := migrations.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if meta.IsStatusConditionTrue(m.Status.Conditions, string(svmv1.MigrationFailed)) {
			t.Fatalf("migration %s failed: %+v", name, m.Status.Conditions)
		}
		if !meta.IsStatusConditionTrue(m.Status.Conditions, string(svmv1.MigrationSucceeded)) {
			return fmt.Errorf("conditions %+v", m.Status.Conditions)
		}
		return nil
	})
}
