package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth/berth/internal/apiserver/discovery"
	"github.com/berth/berth/internal/apiserver/tables"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientdiscovery "k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/testkit/kubectltest"
)

func TestMain(m *testing.M) {
	kubectltest.RunIfChild()
	os.Exit(m.Run())
}

// apiServer serves discovery and OpenAPI for real and stands in for the REST
// core (another package) with the little kubectl needs: a GET answers 404,
// a POST echoes the object back as created. It records every write.
type apiServer struct {
	*httptest.Server
	mu     sync.Mutex
	writes []*http.Request
	pods   corev1.PodList // what a list of pods in "default" returns
}

func newAPIServer(t *testing.T, opts Options) *apiServer {
	t.Helper()
	oa, err := Handler(discovery.Default(), opts)
	if err != nil {
		t.Fatal(err)
	}
	s := &apiServer{}
	mux := http.NewServeMux()
	disc := discovery.Handler(discovery.Default(), nil)
	for _, p := range []string{"/api", "/api/", "/apis", "/apis/"} {
		mux.Handle(p, disc)
	}
	mux.Handle("/openapi/", oa)
	s.Server = httptest.NewServer(s.stubREST(mux))
	t.Cleanup(s.Close)
	return s
}

func (s *apiServer) stubREST(served *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/namespaces/") {
			s.rest(w, r)
			return
		}
		served.ServeHTTP(w, r)
	})
}

func (s *apiServer) rest(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/namespaces/default/pods":
		s.listPods(w, r)
	case r.Method == http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.writes = append(s.writes, r)
		s.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	default:
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound, Message: "not found"})
	}
}

// listPods answers as the REST core will: a Table when kubectl asks for
// one (as kubectl get does), the list otherwise.
func (s *apiServer) listPods(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	pods := s.pods.DeepCopy()
	s.mu.Unlock()
	if !strings.Contains(r.Header.Get("Accept"), "as=Table;v=v1;g=meta.k8s.io") {
		json.NewEncoder(w).Encode(pods)
		return
	}
	table, err := tables.Convert(pods, metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject")))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json;as=Table;v=v1;g=meta.k8s.io")
	json.NewEncoder(w).Encode(table)
}

func (s *apiServer) recordedWrites() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.writes...)
}

// kubectl runs kubectl with default flags against srv and returns its
// combined output and whether it succeeded.
func kubectl(t *testing.T, srv *apiServer, stdin string, args ...string) (string, bool) {
	t.Helper()
	return kubectltest.New(t, srv.URL).Run(stdin, nil, args...)
}

func TestKubectlExplainPodSpec(t *testing.T) {
	srv := newAPIServer(t, Options{})
	out, ok := kubectl(t, srv, "", "explain", "pod.spec")
	if !ok {
		t.Fatalf("kubectl explain pod.spec failed:\n%s", out)
	}
	for _, want := range []string{"KIND:       Pod", "VERSION:    v1", "FIELD: spec <PodSpec>", "containers\t<[]Container> -required-", "nodeName\t<string>"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
	out, ok = kubectl(t, srv, "", "explain", "leases.spec.holderIdentity")
	if !ok || !strings.Contains(out, "GROUP:      coordination.k8s.io") {
		t.Errorf("kubectl explain leases.spec.holderIdentity:\n%s", out)
	}
}

const podWithTypo = `apiVersion: v1
kind: Pod
metadata: {name: demo}
spec:
  containers:
  - name: c
    image: busybox
    imagePullPolcy: Always
`

const goodPod = `apiVersion: v1
kind: Pod
metadata: {name: demo}
spec:
  containers:
  - name: c
    image: busybox
`

// Without server-side field validation advertised, kubectl validates
// against /openapi/v2 (protobuf) itself and sends nothing invalid.
func TestKubectlValidatesClientSideAgainstOurSchema(t *testing.T) {
	srv := newAPIServer(t, Options{})
	out, ok := kubectl(t, srv, podWithTypo, "apply", "--dry-run=client", "-f", "-")
	if ok || !strings.Contains(out, `unknown field "imagePullPolcy" in io.k8s.api.core.v1.Container`) {
		t.Errorf("apply of a pod with a misspelt field: ok=%v\n%s", ok, out)
	}
	out, ok = kubectl(t, srv, goodPod, "apply", "--dry-run=client", "-f", "-")
	if !ok || !strings.Contains(out, "pod/demo created (dry run)") {
		t.Errorf("apply of a valid pod: ok=%v\n%s", ok, out)
	}
	out, ok = kubectl(t, srv, podWithTypo, "create", "-f", "-")
	if ok || !strings.Contains(out, "imagePullPolcy") {
		t.Errorf("create of a pod with a misspelt field: ok=%v\n%s", ok, out)
	}
	if w := srv.recordedWrites(); len(w) != 0 {
		t.Errorf("kubectl sent %d writes although validation failed or dry-run was asked", len(w))
	}
}

// With it advertised (v3), kubectl leaves validation to the server and says
// so with fieldValidation=Strict.
func TestKubectlDefersToServerSideFieldValidation(t *testing.T) {
	srv := newAPIServer(t, Options{ServerSideFieldValidation: true})
	out, ok := kubectl(t, srv, podWithTypo, "create", "-f", "-")
	if !ok || !strings.Contains(out, "pod/demo created") {
		t.Fatalf("kubectl create: ok=%v\n%s", ok, out)
	}
	writes := srv.recordedWrites()
	if len(writes) != 1 || writes[0].URL.Query().Get("fieldValidation") != "Strict" {
		var queries []string
		for _, w := range writes {
			queries = append(queries, w.URL.String())
		}
		t.Errorf("writes %v, want one POST with fieldValidation=Strict", queries)
	}
}

func TestClientGoReadsBothDocuments(t *testing.T) {
	srv := newAPIServer(t, Options{})
	client, err := clientdiscovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	// OpenAPISchema asks for the protobuf form of /openapi/v2.
	doc, err := client.OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	found := false
	for _, def := range doc.GetDefinitions().GetAdditionalProperties() {
		found = found || def.GetName() == "io.k8s.api.core.v1.PodSpec"
	}
	if !found {
		t.Errorf("protobuf v2 document has no io.k8s.api.core.v1.PodSpec")
	}
	root := openapi3.NewRoot(client.OpenAPIV3())
	gvs, err := root.GroupVersions()
	if err != nil {
		t.Fatal(err)
	}
	if len(gvs) != 21 { // core, apps, autoscaling v2 and v1, batch, events, coordination, discovery, certificates, networking, rbac, authentication, authorization, node, policy, scheduling, storage, resource, admissionregistration, flowcontrol, storagemigration
		t.Errorf("v3 group-versions %v, want 21", gvs)
	}
	s, err := root.GVSpec(schema.GroupVersion{Group: "certificates.k8s.io", Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Components.Schemas["io.k8s.api.certificates.v1.CertificateSigningRequestSpec"] == nil {
		t.Errorf("v3 certificates.k8s.io/v1 lacks CertificateSigningRequestSpec")
	}
}

func TestKubectlAPIResources(t *testing.T) {
	srv := newAPIServer(t, Options{})
	out, ok := kubectl(t, srv, "", "api-resources")
	if !ok {
		t.Fatalf("kubectl api-resources failed:\n%s", out)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^pods\s+po\s+v1\s+true\s+Pod$`),
		regexp.MustCompile(`(?m)^nodes\s+no\s+v1\s+false\s+Node$`),
		regexp.MustCompile(`(?m)^certificatesigningrequests\s+csr\s+certificates.k8s.io/v1\s+false\s+CertificateSigningRequest$`),
		regexp.MustCompile(`(?m)^leases\s+coordination.k8s.io/v1\s+true\s+Lease$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("api-resources output lacks %s:\n%s", want, out)
		}
	}
}

// kubectl get asks the server for a Table; these are printed as they come.
func TestKubectlGetPrintsServerTables(t *testing.T) {
	srv := newAPIServer(t, Options{})
	created := metav1.NewTime(time.Now().Add(-3 * time.Hour))
	srv.pods.Items = []corev1.Pod{{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: created},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}},
	}}
	out, ok := kubectl(t, srv, "", "get", "pods")
	if !ok || !regexp.MustCompile(`(?m)^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nweb\s+0/1\s+ContainerCreating\s+0\s+3h$`).MatchString(out) {
		t.Errorf("kubectl get pods: ok=%v\n%s", ok, out)
	}
	out, ok = kubectl(t, srv, "", "get", "pods", "-o", "wide", "--show-labels")
	if !ok || !regexp.MustCompile(`web\s+0/1\s+ContainerCreating\s+0\s+3h\s+<none>\s+node-1\s+<none>\s+<none>\s+<none>`).MatchString(out) {
		t.Errorf("kubectl get pods -o wide: ok=%v\n%s", ok, out)
	}
}
