package serviceaccount

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// objects is a map-backed token getter for the authenticator's unit tests.
type objects struct {
	sas  map[string]*corev1.ServiceAccount
	pods map[string]*corev1.Pod
}

func notFound(resource, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

func (o *objects) GetServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if sa, ok := o.sas[ns+"/"+name]; ok {
		return sa, nil
	}
	return nil, notFound("serviceaccounts", name)
}

func (o *objects) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if p, ok := o.pods[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, notFound("pods", name)
}

func (o *objects) GetSecret(_ context.Context, _, name string) (*corev1.Secret, error) {
	return nil, notFound("secrets", name)
}

func (o *objects) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	return nil, notFound("nodes", name)
}

func (o *objects) GetValidatingWebhookConfiguration(_ context.Context, name string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return nil, notFound("validatingwebhookconfigurations", name)
}

func (o *objects) GetMutatingWebhookConfiguration(_ context.Context, name string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	return nil, notFound("mutatingwebhookconfigurations", name)
}

func meta(ns, name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}
}

func TestKeyIsCreatedOnceAndReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sa.key")
	first, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Equal(again) {
		t.Fatal("a second load made a new key: tokens would not survive a restart")
	}
}

func TestTokensAreBoundToTheirObjects(t *testing.T) {
	key, err := LoadOrCreateKey(filepath.Join(t.TempDir(), "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := NewIssuer(key, DefaultIssuer)
	if err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: meta("team", "robot", "sa-1")}
	pod := &corev1.Pod{ObjectMeta: meta("team", "web", "pod-1")}
	objs := &objects{sas: map[string]*corev1.ServiceAccount{"team/robot": sa}, pods: map[string]*corev1.Pod{"team/web": pod}}
	authn, err := NewAuthenticator(&key.PublicKey, DefaultIssuer, []string{DefaultIssuer}, objs)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	node := &corev1.Node{ObjectMeta: meta("", "node-a", "node-uid")}
	before := time.Now().Truncate(time.Second)
	token, expires, err := issuer.Issue(ctx, sa, pod, node, []string{DefaultIssuer}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if after := time.Now(); expires.Before(before.Add(time.Hour)) || expires.After(after.Add(time.Hour)) {
		t.Errorf("expires %v, want an hour after issuing (%v)", expires, before)
	}
	resp, ok, err := authn.AuthenticateToken(context.Background(), token)
	if err != nil || !ok {
		t.Fatalf("fresh token: %v %v", ok, err)
	}
	u := resp.User
	if u.GetName() != "system:serviceaccount:team:robot" || u.GetUID() != "sa-1" ||
		!slices.Equal(u.GetGroups(), []string{"system:serviceaccounts", "system:serviceaccounts:team"}) ||
		!slices.Equal(u.GetExtra()["authentication.kubernetes.io/pod-name"], []string{"web"}) ||
		!slices.Equal(u.GetExtra()["authentication.kubernetes.io/node-name"], []string{"node-a"}) ||
		!slices.Equal(u.GetExtra()["authentication.kubernetes.io/node-uid"], []string{"node-uid"}) {
		t.Errorf("user %+v", u)
	}
	// Every token has its own ID, its credential ID, as upstream's.
	id := u.GetExtra()["authentication.kubernetes.io/credential-id"]
	again, _, err := issuer.Issue(ctx, sa, pod, node, []string{DefaultIssuer}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	resp2, _, err := authn.AuthenticateToken(context.Background(), again)
	if err != nil || len(id) != 1 || !strings.HasPrefix(id[0], "JTI=") || slices.Equal(resp2.User.GetExtra()["authentication.kubernetes.io/credential-id"], id) {
		t.Errorf("credential IDs %v and %v (%v), want one JTI= each, different", id, resp2.User.GetExtra()["authentication.kubernetes.io/credential-id"], err)
	}

	foreignKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forger, _ := NewIssuer(foreignKey, DefaultIssuer)
	forged, _, _ := forger.Issue(ctx, sa, pod, nil, []string{DefaultIssuer}, time.Hour)
	otherAudience, _, _ := issuer.Issue(ctx, sa, pod, nil, []string{"vault"}, time.Hour)
	elsewhere, _ := NewIssuer(foreignKey, "https://other.example")
	// Past upstream's minute of leeway on expiry and deletion.
	expired, _, _ := issuer.Issue(ctx, sa, pod, nil, []string{DefaultIssuer}, -2*time.Minute)
	longAgo := metav1.NewTime(time.Now().Add(-2 * time.Minute))
	otherIssuer, _, _ := elsewhere.Issue(ctx, sa, pod, nil, []string{DefaultIssuer}, time.Hour)
	parts := strings.Split(token, ".")
	flipped := "A"
	if parts[2][0] == 'A' {
		flipped = "B"
	}
	tampered := parts[0] + "." + parts[1] + "." + flipped + parts[2][1:] // a signature that does not match

	refused := []struct {
		name   string
		token  string
		change func()
		undo   func()
	}{
		{name: "signed by another key", token: forged},
		{name: "for another audience", token: otherAudience},
		{name: "tampered with", token: tampered},
		{name: "expired", token: expired},
		{name: "service account deleted", token: token, change: func() { delete(objs.sas, "team/robot") }, undo: func() { objs.sas["team/robot"] = sa }},
		{name: "service account recreated", token: token,
			change: func() { objs.sas["team/robot"] = &corev1.ServiceAccount{ObjectMeta: meta("team", "robot", "sa-2")} },
			undo:   func() { objs.sas["team/robot"] = sa }},
		{name: "pod deleted", token: token, change: func() { delete(objs.pods, "team/web") }, undo: func() { objs.pods["team/web"] = pod }},
		{name: "pod recreated", token: token,
			change: func() { objs.pods["team/web"] = &corev1.Pod{ObjectMeta: meta("team", "web", "pod-2")} },
			undo:   func() { objs.pods["team/web"] = pod }},
		{name: "pod terminating", token: token,
			change: func() {
				p := pod.DeepCopy()
				p.DeletionTimestamp = &longAgo
				objs.pods["team/web"] = p
			},
			undo: func() { objs.pods["team/web"] = pod }},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			if tc.change != nil {
				tc.change()
				defer tc.undo()
			}
			if resp, ok, err := authn.AuthenticateToken(ctx, tc.token); ok || err == nil {
				t.Fatalf("accepted (%v, %v, %v)", resp, ok, err)
			}
		})
	}
	// Not ours: left to the other authenticators, without an error.
	for name, tok := range map[string]string{"another issuer": otherIssuer, "a bootstrap token": "abcdef.0123456789abcdef", "garbage": "a.b.c"} {
		if _, ok, err := authn.AuthenticateToken(context.Background(), tok); ok || err != nil {
			t.Errorf("%s: ok=%v err=%v, want no opinion", name, ok, err)
		}
	}
	if _, ok, err := authn.AuthenticateToken(context.Background(), token); !ok || err != nil {
		t.Fatalf("the token after the refusals were undone: %v %v", ok, err)
	}
}
