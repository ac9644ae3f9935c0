package tokencleaner_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth/berth/internal/controller/tokencleaner"
	"github.com/berth/berth/internal/testkit/apitest"
	"github.com/berth/berth/internal/testkit/wait"
)

// start is a fresh cluster with the cleaner running on a fake clock at now.
func start(t *testing.T, now time.Time) (kubernetes.Interface, *clocktesting.FakeClock) {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(apitest.Start(t))
	clock := clocktesting.NewFakeClock(now)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- tokencleaner.New(tokencleaner.Config{Client: client, Clock: clock, Logger: apitest.Logger(t)}).Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return client, clock
}

// secret is a Secret named bootstrap-token-<id> in namespace ns; with
// expiration "" it never expires.
func secret(ns, id string, typ corev1.SecretType, expiration string) *corev1.Secret {
	data := map[string][]byte{
		bootstrapapi.BootstrapTokenIDKey:     []byte(id),
		bootstrapapi.BootstrapTokenSecretKey: []byte("0123456789abcdef"),
	}
	if expiration != "" {
		data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(expiration)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: bootstrapapi.BootstrapTokenSecretPrefix + id}, Type: typ, Data: data}
}

func create(ctx context.Context, t *testing.T, c kubernetes.Interface, s *corev1.Secret) {
	t.Helper()
	if _, err := c.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s/%s: %v", s.Namespace, s.Name, err)
	}
}

func exists(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string) bool {
	t.Helper()
	_, err := c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// waitGone waits until the Secret is gone.
func waitGone(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	wait.Until(t, time.Minute, "secret "+ns+"/"+name+" to be deleted", func() bool { return !exists(ctx, t, c, ns, name) })
}

// sentinel creates an already expired token after whatever the test did,
// and waits for the cleaner to delete it: the cleaner handles tokens in the
// order their events arrive, one at a time, so by then it has also judged
// every token created before.
func sentinel(ctx context.Context, t *testing.T, c kubernetes.Interface, id string) {
	t.Helper()
	create(ctx, t, c, secret(metav1.NamespaceSystem, id, bootstrapapi.SecretTypeBootstrapToken, "2000-01-01T00:00:00Z"))
	waitGone(ctx, t, c, metav1.NamespaceSystem, bootstrapapi.BootstrapTokenSecretPrefix+id)
}

func TestDeletesTokensAtTheirExpiry(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	client, clock := start(t, now)
	system, token := metav1.NamespaceSystem, bootstrapapi.SecretTypeBootstrapToken
	name := func(id string) string { return bootstrapapi.BootstrapTokenSecretPrefix + id }

	inAnHour := now.Add(time.Hour).Format(time.RFC3339)
	create(ctx, t, client, secret(system, "later1", token, inAnHour))
	create(ctx, t, client, secret(system, "never1", token, ""))
	create(ctx, t, client, secret(system, "notoke", corev1.SecretTypeOpaque, "2000-01-01T00:00:00Z"))
	create(ctx, t, client, secret("default", "elsewh", token, "2000-01-01T00:00:00Z"))
	create(ctx, t, client, secret(system, "past01", token, now.Add(-time.Second).Format(time.RFC3339)))
	create(ctx, t, client, secret(system, "garble", token, "tomorrow"))

	waitGone(ctx, t, client, system, name("past01"))
	waitGone(ctx, t, client, system, name("garble")) // unparsable: treated as expired, as upstream
	sentinel(ctx, t, client, "sent01")
	for _, kept := range []struct{ ns, name, why string }{
		{system, name("later1"), "expires in an hour"},
		{system, name("never1"), "has no expiration"},
		{system, name("notoke"), "is not a bootstrap token"},
		{"default", name("elsewh"), "is outside kube-system"},
	} {
		if !exists(ctx, t, client, kept.ns, kept.name) {
			t.Errorf("%s/%s was deleted, but it %s", kept.ns, kept.name, kept.why)
		}
	}

	clock.Step(time.Hour - time.Second)
	sentinel(ctx, t, client, "sent02")
	if !exists(ctx, t, client, system, name("later1")) {
		t.Fatal("the token was deleted a second before its expiration")
	}
	clock.Step(time.Second)
	waitGone(ctx, t, client, system, name("later1"))
	if !exists(ctx, t, client, system, name("never1")) {
		t.Error("a token without expiration was deleted")
	}
}

// A token whose expiration is extended before it passes is judged again by
// its new expiration when the old one comes.
func TestExtendedTokenIsKept(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	client, clock := start(t, now)
	system := metav1.NamespaceSystem
	s := secret(system, "extend", bootstrapapi.SecretTypeBootstrapToken, now.Add(time.Minute).Format(time.RFC3339))
	create(ctx, t, client, s)
	sentinel(ctx, t, client, "sent01")

	s.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(now.Add(2 * time.Hour).Format(time.RFC3339))
	if _, err := client.CoreV1().Secrets(system).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sentinel(ctx, t, client, "sent02")
	clock.Step(time.Minute)
	sentinel(ctx, t, client, "sent03")
	if !exists(ctx, t, client, system, s.Name) {
		t.Fatal("the extended token was deleted at its old expiration")
	}
	clock.Step(2 * time.Hour)
	waitGone(ctx, t, client, system, s.Name)
}
