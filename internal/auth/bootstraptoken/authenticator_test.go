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
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// kubeSystemSecrets is a lister of kube-system holding secrets.
func kubeSystemSecrets(t *testing.T, secrets ...*corev1.Secret) corelisters.SecretNamespaceLister {
	t.Helper()
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range secrets {
		if err := store.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewSecretLister(store).Secrets(metav1.NamespaceSystem)
}

// The tokens berth writes (Token.toSecret) authenticate through upstream's
// authenticator, and every way a token can be wrong is refused with a
// warning naming its ID, never its secret.
func TestAuthenticateToken(t *testing.T) {
	now := time.Now()
	good := Token{ID: "abcdef", Secret: "0123456789abcdef", Expires: now.Add(time.Hour)}
	withSecret := func(t Token, edit func(*corev1.Secret)) *corev1.Secret {
		s := t.toSecret()
		if edit != nil {
			edit(s)
		}
		return s
	}
	cases := []struct {
		name       string
		secret     *corev1.Secret // stored under good's name; nil: none
		bearer     string
		wantOK     bool
		wantGroups []string
		wantLog    string // in the refusal line; "" with !wantOK: nothing logged
	}{
		{name: "good", secret: withSecret(good, nil), bearer: good.String(), wantOK: true,
			wantGroups: []string{"system:bootstrappers"}},
		{name: "never expires", secret: withSecret(Token{ID: good.ID, Secret: good.Secret}, nil), bearer: good.String(), wantOK: true,
			wantGroups: []string{"system:bootstrappers"}},
		{name: "extra groups", secret: withSecret(good, func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenExtraGroupsKey] = []byte("system:bootstrappers:workers")
		}), bearer: good.String(), wantOK: true, wantGroups: []string{"system:bootstrappers", "system:bootstrappers:workers"}},
		{name: "expired", secret: withSecret(Token{ID: good.ID, Secret: good.Secret, Expires: now.Add(-time.Second)}, nil),
			bearer: good.String(), wantLog: "bootstrap token refused"},
		{name: "unparsable expiration", secret: withSecret(good, func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte("tomorrow")
		}), bearer: good.String(), wantLog: "bootstrap token refused"},
		{name: "wrong secret", secret: withSecret(good, nil), bearer: good.ID + ".fedcba9876543210", wantLog: "bootstrap token refused"},
		{name: "usage not true", secret: withSecret(good, func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenUsageAuthentication] = []byte("false")
		}), bearer: good.String(), wantLog: "bootstrap token refused"},
		{name: "usage missing", secret: withSecret(good, func(s *corev1.Secret) {
			delete(s.Data, bootstrapapi.BootstrapTokenUsageAuthentication)
		}), bearer: good.String(), wantLog: "bootstrap token refused"},
		{name: "deleted", bearer: good.String(), wantLog: "bootstrap token refused"},
		{name: "being deleted", secret: withSecret(good, func(s *corev1.Secret) {
			s.DeletionTimestamp = &metav1.Time{Time: now}
		}), bearer: good.String(), wantLog: "bootstrap token refused"},
		{name: "wrong secret type", secret: withSecret(good, func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }),
			bearer: good.String(), wantLog: "bootstrap token refused"},
		{name: "token-id differs from name", secret: withSecret(good, func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenIDKey] = []byte("zzzzzz")
		}), bearer: good.String(), wantLog: "bootstrap token refused"},
		{name: "bad extra group", secret: withSecret(good, func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenExtraGroupsKey] = []byte("system:masters")
		}), bearer: good.String(), wantLog: "bootstrap token refused"},
		{name: "not a bootstrap token", secret: withSecret(good, nil), bearer: "some-other-kind-of-token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stored []*corev1.Secret
			if tc.secret != nil {
				stored = append(stored, tc.secret)
			}
			var logs bytes.Buffer
			a := NewAuthenticator(kubeSystemSecrets(t, stored...), slog.New(slog.NewTextHandler(&logs, nil)))
			resp, ok, err := a.AuthenticateToken(context.Background(), tc.bearer)
			if err != nil {
				t.Fatalf("AuthenticateToken: %v", err)
			}
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v (log: %s)", ok, tc.wantOK, logs.String())
			}
			if !ok {
				if tc.wantLog == "" && logs.Len() > 0 {
					t.Errorf("logged %q for a token that is not ours", logs.String())
				}
				if tc.wantLog != "" && !strings.Contains(logs.String(), tc.wantLog) {
					t.Errorf("log %q does not say %q", logs.String(), tc.wantLog)
				}
				if strings.Contains(logs.String(), good.Secret) {
					t.Errorf("log reveals the token secret: %s", logs.String())
				}
				return
			}
			if got := resp.User.GetName(); got != "system:bootstrap:"+good.ID {
				t.Errorf("user = %q", got)
			}
			if got := strings.Join(resp.User.GetGroups(), ","); got != strings.Join(tc.wantGroups, ",") {
				t.Errorf("groups = %q, want %q", got, tc.wantGroups)
			}
		})
	}
}

func TestParseJoinToken(t *testing.T) {
	hash := "sha256:" + strings.Repeat("ab", 32)
	good := JoinToken{CAHash: hash, Token: "abcdef.0123456789abcdef"}
	got, err := ParseJoinToken(good.String())
	if err != nil || got != good {
		t.Fatalf("ParseJoinToken(%q) = %+v, %v", good.String(), got, err)
	}
	if got.ID() != "abcdef" {
		t.Errorf("ID = %q", got.ID())
	}
	for _, bad := range []string{
		"",
		"abcdef.0123456789abcdef", // no pin: refused, never trusted blindly
		"berth::" + hash,
		"berth::sha1:" + strings.Repeat("ab", 20) + "::abcdef.0123456789abcdef",
		"berth::sha256:" + strings.Repeat("AB", 32) + "::abcdef.0123456789abcdef",
		"berth::sha256:" + strings.Repeat("ab", 31) + "::abcdef.0123456789abcdef",
		"berth::" + hash + "::abcdef.0123456789ABCDEF",
		"berth::" + hash + "::abcdef",
	} {
		_, err := ParseJoinToken(bad)
		if err == nil {
			t.Errorf("ParseJoinToken(%q) accepted", bad)
			continue
		}
		if strings.Contains(err.Error(), "0123456789") {
			t.Errorf("error repeats the secret: %v", err)
		}
	}
}

func TestSecretRoundTrip(t *testing.T) {
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef", Expires: time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC), Description: "for node-a"}
	s := tok.toSecret()
	if s.Namespace != "kube-system" || s.Name != "bootstrap-token-abcdef" || s.Type != "bootstrap.kubernetes.io/token" {
		t.Fatalf("secret = %s/%s type %s", s.Namespace, s.Name, s.Type)
	}
	got, ok := fromSecret(s)
	if !ok || !got.Expires.Equal(tok.Expires) || got.ID != tok.ID || got.Secret != tok.Secret || got.Description != tok.Description {
		t.Fatalf("round trip = %+v, %v; want %+v", got, ok, tok)
	}
	if _, ok := fromSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-abcdef"}, Type: corev1.SecretTypeOpaque}); ok {
		t.Error("an Opaque secret was read as a token")
	}
}
