package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/testkit/wait"
)

// extensionServer is a minimal extension API server serving api: it
// trusts only the front proxy's client certificate from
// extension-apiserver-authentication, as an extension API server's
// request-header authenticator does.
func extensionServer(t *testing.T, auth *corev1.ConfigMap, api http.Handler) (port int, caPEM []byte) {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "extension-ca")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(pki.Identity{CommonName: "api.default.svc", DNSNames: []string{"localhost", "api.default.svc"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	proxyCAs := x509.NewCertPool()
	if !proxyCAs.AppendCertsFromPEM([]byte(auth.Data["requestheader-client-ca-file"])) {
		t.Fatalf("extension-apiserver-authentication has no requestheader-client-ca-file: %v", auth.Data)
	}
	var allowed []string
	if err := json.Unmarshal([]byte(auth.Data["requestheader-allowed-names"]), &allowed); err != nil {
		t.Fatalf("requestheader-allowed-names: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(r.TLS.PeerCertificates) == 0 || !slices.Contains(allowed, r.TLS.PeerCertificates[0].Subject.CommonName) {
				http.Error(w, "not the front proxy", http.StatusUnauthorized)
				return
			}
			api.ServeHTTP(w, r)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: proxyCAs, ClientAuth: tls.RequireAndVerifyClientCert},
	}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port, ca.CertPEM
}

// flunders serves wardle.example.com/v1alpha1 flunders, answering with the
// user the aggregator names in X-Remote-User.
func flunders() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/apis", func(w http.ResponseWriter, _ *http.Request) {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: "wardle.example.com/v1alpha1", Version: "v1alpha1"}
		writeJSON(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{Name: "wardle.example.com", Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}}})
	})
	mux.HandleFunc("/apis/wardle.example.com/v1alpha1", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "wardle.example.com/v1alpha1",
			APIResources: []metav1.APIResource{{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder", Verbs: []string{"get", "list"}}}})
	})
	mux.HandleFunc("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"apiVersion": "wardle.example.com/v1alpha1", "kind": "FlunderList",
			"metadata": map[string]any{"resourceVersion": "1"},
			"items":    []any{map[string]any{"metadata": map[string]any{"name": "seen-by-" + r.Header.Get("X-Remote-User")}}}})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// TestAPIAggregationProxiesToAnExtensionServer registers an APIService for
// an extension API server and uses its group through berth as a user of
// kube-apiserver would: the APIService becomes Available, its group is
// discovered, and requests reach the extension server over TLS verified
// with the APIService's CA bundle, from the front proxy's certificate and
// naming the requesting user. The built-in group-versions and the CRDs'
// have local APIServices, as kube-apiserver's do.
func TestAPIAggregationProxiesToAnExtensionServer(t *testing.T) {
	s := startServer(t)
	cfg := s.RESTConfig(t)
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cfg)
	apiServices := apiregistrationclient.NewForConfigOrDie(cfg).ApiregistrationV1().APIServices()

	wait.UntilTrue(t, time.Minute, "the local APIServices v1. and v1.apps to be Available", func(ctx context.Context) (bool, error) {
		for _, name := range []string{"v1.", "v1.apps"} {
			svc, err := apiServices.Get(ctx, name, metav1.GetOptions{})
			if err != nil || svc.Spec.Service != nil || !available(svc) {
				return false, nil
			}
		}
		return true, nil
	})

	aggregate(t, cfg, "wardle.example.com", "v1alpha1", flunders())
	wait.UntilTrue(t, 2*time.Minute, "the aggregated group discovered", func(ctx context.Context) (bool, error) {
		list, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).ServerResourcesForGroupVersion("wardle.example.com/v1alpha1")
		return err == nil && len(list.APIResources) == 1 && list.APIResources[0].Name == "flunders", nil
	})

	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders").DoRaw(ctx)
	if err != nil {
		t.Fatalf("list flunders through the aggregator: %v", err)
	}
	var list struct {
		Items []metav1.PartialObjectMetadata `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("decode flunders: %v: %s", err, raw)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "seen-by-"+adminUser(t, cs) {
		t.Errorf("flunders = %s, want one named after the requesting user", raw)
	}
}

// aggregate serves api as group/version behind the server's aggregator, as
// an extension API server is installed: its Service default/api (an
// ExternalName for localhost, the name its certificate is for) and an
// APIService, waited for until Available.
func aggregate(t *testing.T, cfg *rest.Config, group, version string, api http.Handler) {
	t.Helper()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cfg)
	var auth *corev1.ConfigMap
	wait.UntilTrue(t, time.Minute, "extension-apiserver-authentication with the front proxy's CA", func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		auth = cm
		return cm.Data["requestheader-client-ca-file"] != "", nil
	})
	port, caPEM := extensionServer(t, auth, api)
	const name = "api"
	if _, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []corev1.ServicePort{{Name: "https", Port: int32(port)}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the extension server's Service: %v", err)
	}
	apiServices := apiregistrationclient.NewForConfigOrDie(cfg).ApiregistrationV1().APIServices()
	if _, err := apiServices.Create(ctx, &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: version + "." + group},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: group, Version: version, CABundle: caPEM,
			Service:              &apiregistrationv1.ServiceReference{Namespace: "default", Name: name, Port: ptr.To(int32(port))},
			GroupPriorityMinimum: 2000, VersionPriority: 200,
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create APIService: %v", err)
	}
	wait.UntilTrue(t, 2*time.Minute, "the APIService "+version+"."+group+" to be Available", func(ctx context.Context) (bool, error) {
		svc, err := apiServices.Get(ctx, version+"."+group, metav1.GetOptions{})
		return err == nil && available(svc), nil
	})
}

func available(svc *apiregistrationv1.APIService) bool {
	for _, c := range svc.Status.Conditions {
		if c.Type == apiregistrationv1.Available && c.Status == apiregistrationv1.ConditionTrue {
			return true
		}
	}
	return false
}

// adminUser is the user name the admin kubeconfig authenticates as.
func adminUser(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	raw, err := cs.CoreV1().RESTClient().Post().AbsPath("/apis/authentication.k8s.io/v1/selfsubjectreviews").
		Body([]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)).SetHeader("Content-Type", "application/json").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("self subject review: %v", err)
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(raw, &review); err != nil || review.Status.UserInfo.Username == "" {
		t.Fatalf("self subject review: %v: %s", err, raw)
	}
	return review.Status.UserInfo.Username
}
