package bootstraptoken

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// FuzzParseJoinToken feeds arbitrary strings to ParseJoinToken, which
// parses what an operator pastes into `berth agent --token`. A parsed token
// must print back as the input, and an error must never repeat the
// token's secret.
func FuzzParseJoinToken(f *testing.F) {
	hash := "sha256:" + strings.Repeat("0a", 32)
	for _, s := range []string{
		"berth::" + hash + "::abcdef.0123456789abcdef",
		"berth::" + hash + "::ABCDEF.0123456789abcdef",
		"berth::" + strings.ToUpper(hash) + "::abcdef.0123456789abcdef",
		"berth::sha256:00::abcdef.0123456789abcdef",
		"berth::" + hash + "abcdef.0123456789abcdef",
		"berth::" + hash + "::abcdef.0123456789abcdef::x",
		"berth::::",
		"abcdef.0123456789abcdef",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		j, err := ParseJoinToken(s)
		if err != nil {
			if _, token, ok := strings.Cut(strings.TrimPrefix(s, joinPrefix), joinSep); ok {
				if _, secret, ok := strings.Cut(token, "."); ok && len(secret) >= 16 && !strings.Contains(s[:len(s)-len(token)], secret) && strings.Contains(err.Error(), secret) {
					t.Fatalf("error %q repeats the secret of %q", err, s)
				}
			}
			return
		}
		if j.String() != s {
			t.Fatalf("parsed %q prints as %q", s, j.String())
		}
		if len(j.ID()) != 6 || len(j.Token) != 6+1+16 || len(j.CAHash) != len(hash) {
			t.Fatalf("parsed %q into %+v", s, j)
		}
	})
}

// FuzzAuthenticateToken presents an arbitrary bearer token against an
// arbitrary bootstrap token Secret (as anyone with write access to
// kube-system Secrets, or a corrupted store, could leave it). A token is
// accepted only when every check upstream's bootstrap authenticator makes
// passes, and then only into system:bootstrappers groups.
func FuzzAuthenticateToken(f *testing.F) {
	good := Token{ID: "abcdef", Secret: "0123456789abcdef", Description: "d"}
	f.Add(good.String(), "abcdef", "0123456789abcdef", "true", "", "2099-12-01T00:00:00Z", string(bootstrapapi.SecretTypeBootstrapToken))
	f.Add(good.String(), "abcdef", "0123456789abcdef", "true", "system:bootstrappers:workers,system:bootstrappers:x", "", string(bootstrapapi.SecretTypeBootstrapToken))
	f.Add(good.String(), "abcdef", "0123456789abcdef", "true", "system:masters", "", string(bootstrapapi.SecretTypeBootstrapToken))
	f.Add(good.String(), "abcdef", "0123456789abcdef", "true", "", "tomorrow", string(bootstrapapi.SecretTypeBootstrapToken))
	f.Add(good.String(), "abcdef", "0123456789abcdef", "true", "", "", "Opaque")
	f.Add("abcdef.0123456789abcdeF", "abcdef", "0123456789abcdef", "TRUE", "", "", string(bootstrapapi.SecretTypeBootstrapToken))
	f.Add("abcdef.", "abcdef", "", "true", "", "", string(bootstrapapi.SecretTypeBootstrapToken))
	now := time.Now() // the authenticator reads the clock after this
	f.Fuzz(func(t *testing.T, bearer, id, secret, usage, groups, expires, typ string) {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.BootstrapTokenSecretPrefix + "abcdef", Namespace: metav1.NamespaceSystem},
			Type:       corev1.SecretType(typ),
			Data: map[string][]byte{
				bootstrapapi.BootstrapTokenIDKey:               []byte(id),
				bootstrapapi.BootstrapTokenSecretKey:           []byte(secret),
				bootstrapapi.BootstrapTokenUsageAuthentication: []byte(usage),
				bootstrapapi.BootstrapTokenExtraGroupsKey:      []byte(groups),
				bootstrapapi.BootstrapTokenExpirationKey:       []byte(expires),
			},
		}
		var logs bytes.Buffer
		a := NewAuthenticator(kubeSystemSecrets(t, s), slog.New(slog.NewTextHandler(&logs, nil)))
		resp, ok, err := a.AuthenticateToken(context.Background(), bearer)
		if err != nil {
			t.Fatalf("AuthenticateToken(%q): %v", bearer, err)
		}
		if leaks(logs.String(), secret, id, usage, groups, expires, typ) {
			t.Fatalf("log %q repeats the secret %q", logs.String(), secret)
		}
		if !ok {
			return
		}
		exp, expErr := time.Parse(time.RFC3339, expires)
		switch {
		case bearer != "abcdef."+secret || id != "abcdef" || usage != "true":
			t.Fatalf("accepted %q for secret id=%q secret=%q usage=%q", bearer, id, secret, usage)
		case typ != string(bootstrapapi.SecretTypeBootstrapToken):
			t.Fatalf("accepted a Secret of type %q", typ)
		case expires != "" && (expErr != nil || !now.Before(exp)):
			t.Fatalf("accepted a token expiring %q at %v", expires, now)
		case resp.User.GetName() != bootstrapapi.BootstrapUserPrefix+"abcdef":
			t.Fatalf("user %q", resp.User.GetName())
		}
		for _, g := range resp.User.GetGroups() {
			if g != bootstrapapi.BootstrapDefaultGroup && !strings.HasPrefix(g, bootstrapapi.BootstrapDefaultGroup+":") {
				t.Fatalf("granted group %q (extra groups %q)", g, groups)
			}
		}
	})
}

// leaks says log repeats secret, when secret is long enough to be told
// apart from the log's own words and appears in no field that is logged.
func leaks(log, secret string, logged ...string) bool {
	if len(secret) < 16 || strings.Trim(secret, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		return false
	}
	for _, l := range logged {
		if strings.Contains(l, secret) {
			return false
		}
	}
	return strings.Contains(log, secret)
}

// FuzzTokenFromSecret reads arbitrary Secrets back as tokens (what `berth
// token list` shows): one that reads as a token must name its own Secret.
func FuzzTokenFromSecret(f *testing.F) {
	f.Add("bootstrap-token-abcdef", "abcdef", "0123456789abcdef", "2099-12-01T00:00:00Z", string(bootstrapapi.SecretTypeBootstrapToken))
	f.Add("bootstrap-token-abcdef", "abcdef", "0123456789abcdef", "never", string(bootstrapapi.SecretTypeBootstrapToken))
	f.Add("bootstrap-token-ABCDEF", "ABCDEF", "", "", string(bootstrapapi.SecretTypeBootstrapToken))
	f.Add("bootstrap-token-", "", "", "", "")
	f.Fuzz(func(t *testing.T, name, id, secret, expires, typ string) {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem},
			Type:       corev1.SecretType(typ),
			Data: map[string][]byte{
				bootstrapapi.BootstrapTokenIDKey:         []byte(id),
				bootstrapapi.BootstrapTokenSecretKey:     []byte(secret),
				bootstrapapi.BootstrapTokenExpirationKey: []byte(expires),
			},
		}
		tok, ok := fromSecret(s)
		if !ok {
			return
		}
		if back := tok.toSecret(); back.Name != name || tok.ID != id || tok.Secret != secret {
			t.Fatalf("Secret %q read as token %+v, written back as %q", name, tok, back.Name)
		}
		if expires != "" && tok.Expires.IsZero() {
			t.Fatalf("expiration %q read as never", expires)
		}
	})
}
