// Package bootstraptoken holds berth's side of upstream's bootstrap tokens:
// the authenticator (kube-apiserver's own, which turns "Authorization:
// Bearer <id>.<secret>" into the user system:bootstrap:<id>), the Secrets
// that store tokens (type bootstrap.kubernetes.io/token in kube-system, the
// format kubeadm and the kubelet know), and berth's join token, which adds
// the server CA's pin.
package bootstraptoken

import (
	"context"
	"log/slog"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/cluster-bootstrap/util/tokens"
	"k8s.io/kubernetes/plugin/pkg/auth/authenticator/token/bootstrap"
)

// Authenticator is kube-apiserver's bootstrap-token authenticator, which
// logs why it refuses a token only at klog's verbosity 3, with a warning
// of its own for each refusal: a join that fails is then visible in the
// server's log by token ID (never its secret).
type Authenticator struct {
	upstream *bootstrap.TokenAuthenticator
	log      *slog.Logger
}

// NewAuthenticator reads tokens through secrets (kube-system's).
func NewAuthenticator(secrets corelisters.SecretNamespaceLister, log *slog.Logger) *Authenticator {
	return &Authenticator{upstream: bootstrap.NewTokenAuthenticator(secrets), log: log}
}

var _ authenticator.Token = (*Authenticator)(nil)

// AuthenticateToken implements authenticator.Token. A string that is not
// shaped like a bootstrap token is not ours and is passed over silently
// (other token authenticators may know it). Refusals return no error, as
// upstream: the client sees only 401 and learns nothing about which check
// failed.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	resp, ok, err := a.upstream.AuthenticateToken(ctx, token)
	if !ok && err == nil {
		if id, _, perr := tokens.ParseToken(token); perr == nil {
			a.log.Warn("bootstrap token refused (unknown, expired, deleted or not for authentication)", "tokenID", id)
		}
	}
	return resp, ok, err
}
