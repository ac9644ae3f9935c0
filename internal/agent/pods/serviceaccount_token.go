package pods

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Token renewal, as kubelet's token manager: a token is replaced once 80%
// of its lifetime has passed, or once it is a day old, whichever is first.
const (
	tokenRenewFraction = 0.8
	tokenMaxAge        = 24 * time.Hour
)

// tokenKey names one projected token: the same pod, account, audience and
// lifetime share it across resyncs.
type tokenKey struct {
	pod      types.UID
	account  string
	audience string
	seconds  int64
}

type issuedToken struct {
	token   string
	issued  time.Time
	expires time.Time
}

// tokenCache keeps the service-account tokens of the node's projected
// volumes, so that the resync that rewrites volume files every few seconds
// asks the API server for a new token only when the old one is due.
type tokenCache struct {
	mu     sync.Mutex
	tokens map[tokenKey]issuedToken
}

func newTokenCache() *tokenCache { return &tokenCache{tokens: map[tokenKey]issuedToken{}} }

func (c *tokenCache) get(k tokenKey, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tokens[k]
	if !ok {
		return "", false
	}
	lifetime := t.expires.Sub(t.issued)
	renewAt := t.issued.Add(min(time.Duration(float64(lifetime)*tokenRenewFraction), tokenMaxAge))
	if !now.Before(renewAt) {
		return "", false
	}
	return t.token, true
}

func (c *tokenCache) put(k tokenKey, t issuedToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens[k] = t
}

// forget drops the tokens of a pod that is gone.
func (c *tokenCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.tokens {
		if k.pod == uid {
			delete(c.tokens, k)
		}
	}
}

// serviceAccountTokenFiles is a projected serviceAccountToken source: a
// TokenRequest for the pod's service account, bound to the pod (so the
// token dies with it, and the Node authorizer lets a node ask only for its
// own pods' accounts), cached until it is due for renewal.
func (m *Manager) serviceAccountTokenFiles(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection) (map[string][]byte, error) {
	account := pod.Spec.ServiceAccountName
	if account == "" {
		account = "default"
	}
	seconds := int64(3600) // the API's default for the projection
	if src.ExpirationSeconds != nil {
		seconds = *src.ExpirationSeconds
	}
	key := tokenKey{pod: pod.UID, account: account, audience: src.Audience, seconds: seconds}
	now := m.clock.Now()
	if token, ok := m.tokens.get(key, now); ok {
		return map[string][]byte{src.Path: []byte(token)}, nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &seconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	resp, err := m.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, account, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for service account %q: %w", account, err)
	}
	m.tokens.put(key, issuedToken{token: resp.Status.Token, issued: now, expires: resp.Status.ExpirationTimestamp.Time})
	return map[string][]byte{src.Path: []byte(resp.Status.Token)}, nil
}
