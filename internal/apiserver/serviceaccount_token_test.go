package apiserver

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/auth/serviceaccount"
)

// robotMayListConfigMaps lets the admin do anything and the robot service
// account list configmaps.
var robotMayListConfigMaps = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "admin" || (a.GetUser().GetName() == "system:serviceaccount:default:robot" && a.GetResource() == "configmaps" && a.GetVerb() == "list") {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

func TestTokenRequestIssuesBoundTokens(t *testing.T) {
	t.Parallel()
	key, err := serviceaccount.LoadOrCreateKey(filepath.Join(t.TempDir(), "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := serviceaccount.NewIssuer(key, serviceaccount.DefaultIssuer)
	if err != nil {
		t.Fatal(err)
	}
	audiences := []string{serviceaccount.DefaultIssuer}
	client := &lateClient{} // set once the server (and so its admin client) exists
	tokens, err := serviceaccount.NewAuthenticator(&key.PublicKey, serviceaccount.DefaultIssuer, audiences, serviceaccount.ClientObjects{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServerWith(t, func(c *Config) {
		c.Authenticator = union.New(bearertoken.New(tokens), adminOnlyWithoutToken)
		c.Authorizer = robotMayListConfigMaps
		c.ServiceAccountTokens = &ServiceAccountTokens{Issuer: issuer, Audiences: audiences}
	})
	client.Interface = s.client
	ctx := testContext(t)
	core := s.client.CoreV1()
	if _, err := core.ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{ServiceAccountName: "robot", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if pod, err = core.Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	request := func(ref *authenticationv1.BoundObjectReference, seconds int64) (*authenticationv1.TokenRequest, error) {
		return core.ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: ref, ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	}
	tr, err := request(&authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web"}, 3600)
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	if tr.Status.Token == "" || tr.Spec.BoundObjectRef.UID != pod.UID || len(tr.Spec.Audiences) != 1 {
		t.Fatalf("token request answered %+v", tr)
	}
	robot := clientWithToken(s.url, tr.Status.Token)
	if _, err := robot.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the robot's token: %v", err)
	}
	if _, err := robot.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the robot reading secrets: %v, want 403 (authenticated, not authorized)", err)
	}

	before := storeRevision(t, s)
	for name, ref := range map[string]*authenticationv1.BoundObjectReference{
		"a missing pod":    {Kind: "Pod", APIVersion: "v1", Name: "ghost"},
		"a pod's old UID":  {Kind: "Pod", APIVersion: "v1", Name: "web", UID: "not-the-uid"},
		"a secret binding": {Kind: "Secret", APIVersion: "v1", Name: "s"},
	} {
		if _, err := request(ref, 3600); err == nil {
			t.Errorf("token bound to %s was issued", name)
		}
	}
	if _, err := request(nil, 60); !apierrors.IsInvalid(err) {
		t.Errorf("a one-minute token: %v, want 422", err)
	}
	if _, err := core.ServiceAccounts("default").CreateToken(ctx, "nobody", &authenticationv1.TokenRequest{}, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("token for a missing service account: %v, want 404", err)
	}
	assertStoreUnchanged(t, s, before)

	// The token dies with its pod.
	zero := int64(0)
	if err := core.Pods("default").Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := robot.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("the token after its pod was deleted: %v, want 401", err)
	}
}

// adminOnlyWithoutToken authenticates requests that carry no bearer token
// as the admin (the test's own client).
var adminOnlyWithoutToken = authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
	if req.Header.Get("Authorization") != "" {
		return nil, false, nil
	}
	return adminAuthenticator.AuthenticateRequest(req)
})

// lateClient is a client set after it is handed out.
type lateClient struct{ kubernetes.Interface }

func clientWithToken(url, token string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: url, BearerToken: token, Timeout: 30 * time.Second})
}
