package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/atomicfile"
	"github.com/berth/berth/internal/auth/bootstraptoken"
	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/informeropts"
	"github.com/berth/berth/internal/pki"
)

// bootstrapTokens authenticates join tokens from their kube-system Secrets,
// read through an informer on the server's own endpoint (as the API server's
// own identity), as kube-apiserver does: the authenticator never touches the
// store, and a lookup costs no request. A token is usable a moment after it
// is created, once the watch delivers it (the agent retries 401 briefly).
type bootstrapTokens struct {
	authn   *bootstraptoken.Authenticator
	factory informers.SharedInformerFactory
}

func newBootstrapTokens(cfg Config, lb *inprocess.Loopback) (*bootstrapTokens, error) {
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("bootstrap token authenticator: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informeropts.Factory(informers.WithNamespace(metav1.NamespaceSystem))...)
	secrets := factory.Core().V1().Secrets().Lister().Secrets(metav1.NamespaceSystem)
	return &bootstrapTokens{
		authn:   bootstraptoken.NewAuthenticator(secrets, cfg.Logger.With("component", "bootstrap-tokens")),
		factory: factory,
	}, nil
}

// start runs the informer once the server serves; wait blocks until it has
// stopped after ctx ends.
func (b *bootstrapTokens) start(ctx context.Context) (wait func()) {
	b.factory.Start(ctx.Done())
	return b.factory.Shutdown
}

// defaultTokenTTL is the default join token's lifetime, as kubeadm's.
const defaultTokenTTL = 24 * time.Hour

// ensureDefaultToken writes a join token to DATA_DIR/token (0600) on first
// start, and on later starts keeps the one there while it is still stored,
// unexpired and pinned to this cluster's CA; otherwise it creates a new one.
func ensureDefaultToken(ctx context.Context, cfg Config, lb *inprocess.Loopback, cluster *pki.Cluster) error {
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return fmt.Errorf("default join token: %w", err)
	}
	path, pin := cfg.path("token"), pki.PublicKeyHash(cluster.ServerCA.Cert)
	// The API may still be starting (system namespaces): retry briefly.
	retryCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		reused, err := reuseDefaultToken(retryCtx, client, path, pin)
		if err == nil && !reused {
			err = createDefaultToken(retryCtx, client, path, pin)
		}
		if err == nil {
			cfg.Logger.Info("join token ready", "path", path, "reused", reused)
			return nil
		}
		select {
		case <-retryCtx.Done():
			if ctx.Err() != nil {
				return nil // shutting down: not a failure (retryCtx ends with ctx)
			}
			return fmt.Errorf("default join token in %s: %w", path, err)
		case <-time.After(time.Second):
		}
	}
}

// reuseDefaultToken reports whether the token in path is still good.
func reuseDefaultToken(ctx context.Context, client kubernetes.Interface, path, pin string) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	j, err := bootstraptoken.ParseJoinToken(strings.TrimSpace(string(data)))
	if err != nil || j.CAHash != pin {
		return false, nil
	}
	stored, err := bootstraptoken.Get(ctx, client, j.ID())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	same := subtle.ConstantTimeCompare([]byte(stored.String()), []byte(j.Token)) == 1
	// Keep it only if it has a while left to live: a token about to expire
	// would fail the next join.
	return same && !stored.Expired(time.Now().Add(time.Hour)), nil
}

func createDefaultToken(ctx context.Context, client kubernetes.Interface, path, pin string) error {
	t, err := bootstraptoken.Create(ctx, client, defaultTokenTTL, "default join token written by berth server to "+path, time.Now())
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, []byte(bootstraptoken.JoinToken{CAHash: pin, Token: t.String()}.String()+"\n"), 0o600)
}
