package serviceaccount

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// DefaultIssuer is the "iss" of berth's tokens and their default audience,
// kube-apiserver's conventional --service-account-issuer.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// Issuer signs tokens.
type Issuer struct {
	issuer string
	signer jose.Signer
	now    func() time.Time
}

// NewIssuer signs with key as issuer (now is the clock: time.Now outside tests).
func NewIssuer(key *ecdsa.PrivateKey, issuer string, now func() time.Time) (*Issuer, error) {
	kid, err := keyID(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("service-account token signer: %w", err)
	}
	return &Issuer{issuer: issuer, signer: signer, now: now}, nil
}

// Issue returns a token for sa, bound to pod when pod is not nil (and
// naming node, the pod's, when it is not nil), valid for audiences until
// lifetime has passed. Each token has an ID of its own (jti), which
// authenticates as its credential ID, as upstream's do.
func (i *Issuer) Issue(sa *corev1.ServiceAccount, pod *corev1.Pod, node *corev1.Node, audiences []string, lifetime time.Duration) (string, time.Time, error) {
	if len(audiences) == 0 {
		return "", time.Time{}, errors.New("a token needs at least one audience")
	}
	now := i.now()
	expires := now.Add(lifetime)
	c := claims{
		Claims: jwt.Claims{
			Issuer: i.issuer, Subject: serviceaccount.MakeUsername(sa.Namespace, sa.Name), Audience: jwt.Audience(audiences),
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(expires),
			ID: string(uuid.NewUUID()),
		},
		privateClaims: privateClaims{Kubernetes: kubernetesClaims{
			Namespace: sa.Namespace, ServiceAccount: ref{Name: sa.Name, UID: string(sa.UID)},
		}},
	}
	if pod != nil {
		c.Kubernetes.Pod = &ref{Name: pod.Name, UID: string(pod.UID)}
		if node != nil {
			c.Kubernetes.Node = &ref{Name: node.Name, UID: string(node.UID)}
		}
	}
	token, err := jwt.Signed(i.signer).Claims(c.Claims).Claims(c.privateClaims).Serialize()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("signing a service-account token: %w", err)
	}
	return token, expires, nil
}
