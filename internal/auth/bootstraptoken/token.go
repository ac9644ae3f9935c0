package bootstraptoken

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstrapsecretutil "k8s.io/cluster-bootstrap/util/secrets"
)

// Token is one bootstrap token as stored in its Secret.
type Token struct {
	ID          string
	Secret      string
	Expires     time.Time // zero: never
	Description string
}

// String is the bearer form "<id>.<secret>".
func (t Token) String() string { return bootstraputil.TokenFromIDAndSecret(t.ID, t.Secret) }

// Expired reports whether t is past its expiration at now.
func (t Token) Expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

// toSecret renders t in upstream's format, usable for authentication only
// (berth does not sign a cluster-info ConfigMap: the join token carries the
// CA pin itself).
func (t Token) toSecret() *corev1.Secret {
	data := map[string][]byte{
		bootstrapapi.BootstrapTokenIDKey:               []byte(t.ID),
		bootstrapapi.BootstrapTokenSecretKey:           []byte(t.Secret),
		bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
	}
	if !t.Expires.IsZero() {
		data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(t.Expires.UTC().Format(time.RFC3339))
	}
	if t.Description != "" {
		data[bootstrapapi.BootstrapTokenDescriptionKey] = []byte(t.Description)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(t.ID), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data:       data,
	}
}

// fromSecret reads a token back; ok is false for Secrets that are not tokens.
func fromSecret(s *corev1.Secret) (Token, bool) {
	id, ok := bootstrapsecretutil.ParseName(s.Name)
	if !ok || s.Type != bootstrapapi.SecretTypeBootstrapToken || bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenIDKey) != id {
		return Token{}, false
	}
	t := Token{
		ID:          id,
		Secret:      bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenSecretKey),
		Description: bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenDescriptionKey),
	}
	if exp := bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenExpirationKey); exp != "" {
		// An unparsable expiration is treated as already expired, as the authenticator does.
		t.Expires, _ = time.Parse(time.RFC3339, exp)
		if t.Expires.IsZero() {
			t.Expires = time.Unix(0, 0)
		}
	}
	return t, true
}

// Create stores a fresh random token that expires after ttl (0: never).
func Create(ctx context.Context, client kubernetes.Interface, ttl time.Duration, description string, now time.Time) (Token, error) {
	if ttl < 0 {
		return Token{}, fmt.Errorf("ttl %s: must not be negative (0 means never expires)", ttl)
	}
	raw, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return Token{}, fmt.Errorf("generate token: %w", err)
	}
	id, secret, _ := strings.Cut(raw, ".")
	t := Token{ID: id, Secret: secret, Description: description}
	if ttl > 0 {
		t.Expires = now.Add(ttl).Truncate(time.Second)
	}
	if _, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, t.toSecret(), metav1.CreateOptions{}); err != nil {
		return Token{}, fmt.Errorf("store token %s: %w", id, err)
	}
	return t, nil
}

// Get reads the token with id.
func Get(ctx context.Context, client kubernetes.Interface, id string) (Token, error) {
	if !bootstraputil.IsValidBootstrapTokenID(id) {
		return Token{}, fmt.Errorf("token ID %q: want 6 characters [a-z0-9]", id)
	}
	s, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.GetOptions{})
	if err != nil {
		return Token{}, fmt.Errorf("token %s: %w", id, err)
	}
	t, ok := fromSecret(s)
	if !ok {
		return Token{}, fmt.Errorf("secret %s is not a bootstrap token", s.Name)
	}
	return t, nil
}

// List returns every bootstrap token, sorted by ID.
func List(ctx context.Context, client kubernetes.Interface) ([]Token, error) {
	secrets, err := client.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	var out []Token
	for i := range secrets.Items {
		if t, ok := fromSecret(&secrets.Items[i]); ok {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Delete removes the token with id, so it authenticates no more.
func Delete(ctx context.Context, client kubernetes.Interface, id string) error {
	if !bootstraputil.IsValidBootstrapTokenID(id) {
		return fmt.Errorf("token ID %q: want 6 characters [a-z0-9]", id)
	}
	err := client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.DeleteOptions{})
	if err != nil {
		return fmt.Errorf("delete token %s: %w", id, err)
	}
	return nil
}
