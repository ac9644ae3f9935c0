// Package bootstraptoken implements upstream's bootstrap tokens for berth:
// the authenticator that turns "Authorization: Bearer <id>.<secret>" into the
// user system:bootstrap:<id>, the Secrets that store tokens (type
// bootstrap.kubernetes.io/token in kube-system, the format kubeadm and the
// kubelet know), and berth's join token, which adds the server CA's pin.
//
// The authenticator is written here rather than imported because upstream's
// lives in k8s.io/kubernetes, which is not a library; the constants, parsing
// and validation come from k8s.io/cluster-bootstrap.
package bootstraptoken

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstrapsecretutil "k8s.io/cluster-bootstrap/util/secrets"
	"k8s.io/cluster-bootstrap/util/tokens"
)

// SecretGetter reads one Secret of kube-system by name.
// client-go's SecretNamespaceLister satisfies it.
type SecretGetter interface {
	Get(name string) (*corev1.Secret, error)
}

// Authenticator authenticates bootstrap tokens against their Secrets.
type Authenticator struct {
	secrets SecretGetter
	now     func() time.Time
	log     *slog.Logger
}

// NewAuthenticator reads tokens through secrets (kube-system only).
func NewAuthenticator(secrets SecretGetter, now func() time.Time, log *slog.Logger) *Authenticator {
	return &Authenticator{secrets: secrets, now: now, log: log}
}

var _ authenticator.Token = (*Authenticator)(nil)

// AuthenticateToken implements authenticator.Token. A string that is not
// shaped like a bootstrap token is not ours and is passed over silently (other
// token authenticators may know it); a bootstrap token that fails any check
// is refused with a log line naming its ID and the reason, never its secret.
// Refusals return no error, as upstream: the client sees only 401, so it
// learns nothing about which check failed.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	id, secret, err := tokens.ParseToken(token)
	if err != nil {
		return nil, false, nil
	}
	s, err := a.secrets.Get(bootstrapapi.BootstrapTokenSecretPrefix + id)
	if err != nil {
		if apierrors.IsNotFound(err) {
			a.refuse(id, "no such token (never created, deleted or cleaned up)")
			return nil, false, nil
		}
		return nil, false, err
	}
	groups, reason := a.check(s, id, secret)
	if reason != "" {
		a.refuse(id, reason)
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{
		Name:   bootstrapapi.BootstrapUserPrefix + id,
		Groups: groups,
	}}, true, nil
}

// check returns the token's groups, or why it must be refused.
func (a *Authenticator) check(s *corev1.Secret, id, secret string) ([]string, string) {
	switch {
	case s.DeletionTimestamp != nil:
		return nil, "token is being deleted"
	case s.Type != bootstrapapi.SecretTypeBootstrapToken:
		return nil, "secret has type " + string(s.Type) + ", not " + string(bootstrapapi.SecretTypeBootstrapToken)
	case bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenIDKey) != id:
		return nil, "secret's token-id does not match its name"
	// Constant time, so response timing does not reveal how much of a
	// guessed secret was right.
	case subtle.ConstantTimeCompare([]byte(bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenSecretKey)), []byte(secret)) != 1:
		return nil, "wrong token secret"
	case bootstrapsecretutil.HasExpired(s, a.now()):
		return nil, "token expired at " + bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenExpirationKey)
	case bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenUsageAuthentication) != "true":
		return nil, "token is not marked " + bootstrapapi.BootstrapTokenUsageAuthentication + "=true"
	}
	groups, err := bootstrapsecretutil.GetGroups(s)
	if err != nil {
		return nil, "invalid " + bootstrapapi.BootstrapTokenExtraGroupsKey + ": " + err.Error()
	}
	return groups, ""
}

func (a *Authenticator) refuse(id, reason string) {
	a.log.Warn("bootstrap token refused", "tokenID", id, "reason", reason)
}
