package serviceaccount

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/apis/core"
	upstream "k8s.io/kubernetes/pkg/serviceaccount"
)

// DefaultIssuer is the "iss" of berth's tokens and their default audience,
// kube-apiserver's conventional --service-account-issuer.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// Issuer signs tokens with upstream's generator and claims.
type Issuer struct {
	generator upstream.TokenGenerator
}

// NewIssuer signs with key as issuer.
func NewIssuer(key *ecdsa.PrivateKey, issuer string) (*Issuer, error) {
	generator, err := upstream.JWTTokenGenerator(issuer, key)
	if err != nil {
		return nil, fmt.Errorf("service-account token signer: %w", err)
	}
	return &Issuer{generator: generator}, nil
}

// Issue returns a token for sa, bound to pod when pod is not nil (and
// naming node, the pod's, when it is not nil), valid for audiences until
// lifetime has passed.
func (i *Issuer) Issue(ctx context.Context, sa *corev1.ServiceAccount, pod *corev1.Pod, node *corev1.Node, audiences []string, lifetime time.Duration) (string, time.Time, error) {
	if len(audiences) == 0 {
		return "", time.Time{}, errors.New("a token needs at least one audience")
	}
	var boundPod *core.Pod
	var boundNode *core.Node
	if pod != nil {
		boundPod = &core.Pod{ObjectMeta: identity(pod.ObjectMeta)}
		if node != nil {
			boundNode = &core.Node{ObjectMeta: identity(node.ObjectMeta)}
		}
	}
	public, private, err := upstream.Claims(core.ServiceAccount{ObjectMeta: identity(sa.ObjectMeta)}, boundPod, nil, boundNode,
		nil, nil, int64(lifetime/time.Second), 0, audiences, nil)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("service-account token claims: %w", err)
	}
	token, err := i.generator.GenerateToken(ctx, public, private)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("signing a service-account token: %w", err)
	}
	return token, public.Expiry.Time(), nil
}

// identity is what a token's claims name of an object: upstream's claims
// read only these fields, so no whole conversion to internal types.
func identity(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: m.UID}
}
