package serviceaccount

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	apiserverjwt "k8s.io/apiserver/pkg/authentication/token/jwt"
)

// Objects reads the ServiceAccounts and Pods tokens are bound to, as the
// store has them now (a token outlives neither).
type Objects interface {
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// Authenticator accepts bearer tokens this server issued: signed by its
// key, from its issuer, not expired, for one of its audiences, whose
// ServiceAccount (and Pod, when bound to one) still exists with the UID
// the token names. Tokens from another issuer are left to the other
// authenticators; bad ones of this issuer are refused and logged.
type Authenticator struct {
	key       *ecdsa.PublicKey
	issuer    string
	audiences []string
	objects   Objects
	now       func() time.Time
	log       *slog.Logger
}

// NewAuthenticator verifies tokens signed by key for issuer and audiences.
func NewAuthenticator(key *ecdsa.PublicKey, issuer string, audiences []string, objects Objects, now func() time.Time, log *slog.Logger) *Authenticator {
	return &Authenticator{key: key, issuer: issuer, audiences: audiences, objects: objects, now: now, log: log}
}

var _ authenticator.Token = (*Authenticator)(nil)

// AuthenticateToken implements authenticator.Token.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if strings.Count(token, ".") != 2 {
		return nil, false, nil // not a JWT: some other authenticator's
	}
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return nil, false, nil
	}
	var unverified jwt.Claims
	if err := parsed.UnsafeClaimsWithoutVerification(&unverified); err != nil || unverified.Issuer != a.issuer {
		return nil, false, nil
	}
	resp, err := a.verify(ctx, parsed)
	if err != nil {
		a.log.Info("service-account token refused", "subject", unverified.Subject, "err", err)
		return nil, false, err
	}
	return resp, true, nil
}

func (a *Authenticator) verify(ctx context.Context, parsed *jwt.JSONWebToken) (*authenticator.Response, error) {
	var c claims
	if err := parsed.Claims(a.key, &c.Claims, &c.privateClaims); err != nil {
		return nil, fmt.Errorf("invalid signature: %w", err)
	}
	if err := c.Claims.ValidateWithLeeway(jwt.Expected{Issuer: a.issuer, Time: a.now()}, 0); err != nil {
		return nil, fmt.Errorf("invalid token: %w", err)
	}
	audiences := slices.DeleteFunc(slices.Clone(a.audiences), func(aud string) bool { return !c.Audience.Contains(aud) })
	if len(audiences) == 0 {
		return nil, fmt.Errorf("token audiences %v are not this server's %v", []string(c.Audience), a.audiences)
	}
	k := c.Kubernetes
	if k.Namespace == "" || k.ServiceAccount.Name == "" || c.Subject != serviceaccount.MakeUsername(k.Namespace, k.ServiceAccount.Name) {
		return nil, errors.New("token names no service account")
	}
	info := &serviceaccount.ServiceAccountInfo{Namespace: k.Namespace, Name: k.ServiceAccount.Name, UID: k.ServiceAccount.UID}
	if err := a.stillValid(ctx, k); err != nil {
		return nil, err
	}
	if k.Pod != nil {
		info.PodName, info.PodUID = k.Pod.Name, k.Pod.UID
	}
	if k.Node != nil {
		info.NodeName, info.NodeUID = k.Node.Name, k.Node.UID
	}
	if c.ID != "" {
		info.CredentialID = apiserverjwt.CredentialIDForJTI(c.ID)
	}
	return &authenticator.Response{User: info.UserInfo(), Audiences: audiences}, nil
}

// stillValid checks the token's ServiceAccount and Pod still exist as the
// same objects (same UID; the pod not being deleted).
func (a *Authenticator) stillValid(ctx context.Context, k kubernetesClaims) error {
	sa, err := a.objects.ServiceAccount(ctx, k.Namespace, k.ServiceAccount.Name)
	if err != nil {
		return lookupError("service account", k.Namespace, k.ServiceAccount.Name, err)
	}
	if string(sa.UID) != k.ServiceAccount.UID {
		return fmt.Errorf("service account %s/%s was recreated (UID %s, token names %s)", k.Namespace, sa.Name, sa.UID, k.ServiceAccount.UID)
	}
	if k.Pod == nil {
		return nil
	}
	pod, err := a.objects.Pod(ctx, k.Namespace, k.Pod.Name)
	if err != nil {
		return lookupError("pod", k.Namespace, k.Pod.Name, err)
	}
	if string(pod.UID) != k.Pod.UID {
		return fmt.Errorf("pod %s/%s was recreated (UID %s, token names %s)", k.Namespace, pod.Name, pod.UID, k.Pod.UID)
	}
	if pod.DeletionTimestamp != nil {
		return fmt.Errorf("pod %s/%s is being deleted", k.Namespace, pod.Name)
	}
	return nil
}

func lookupError(what, namespace, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s/%s no longer exists", what, namespace, name)
	}
	return fmt.Errorf("looking up %s %s/%s: %w", what, namespace, name, err)
}
