package node_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/internal/admission/noderestriction"
	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/auth"
	"github.com/berth/berth/internal/auth/node"
	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/testkit/etcdtest"
)

// cluster is a berth API server over a real embedded etcd, served over TLS
// on loopback with berth's real authentication, authorizer chain (Node
// authorizer included, its graph fed through the server as system:apiserver)
// and NodeRestriction admission: the wiring of internal/server, without the
// controllers, so that the store's revision moves only by the test's writes.
type cluster struct {
	store store.Interface
	pki   *pki.Cluster
	url   string
	graph *node.Graph
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	certs, err := pki.LoadOrCreateCluster(t.TempDir(), pki.DefaultServingNames(nil))
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(certs.ClientCA.Cert)
	graph := node.NewGraph()
	authz, err := auth.NewAuthorizer(node.NewAuthorizer(graph))
	if err != nil {
		t.Fatal(err)
	}
	st := etcdtest.New(t)
	handler, err := apiserver.New(ctx, apiserver.Config{
		Store:         st,
		Authenticator: auth.NewAuthenticator(clientCAs),
		Authorizer:    authz,
		Admission:     noderestriction.New(graph),
		ReadView:      node.PodView,
		Logger:        slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := tls.LoadX509KeyPair(certs.ServingCertFile, certs.ServingKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handler)
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{serving}, ClientCAs: clientCAs, ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	t.Cleanup(cancel) // runs first: stop watches and the graph before the listener closes
	c := &cluster{store: st, pki: certs, url: srv.URL, graph: graph}

	graphDone := make(chan struct{})
	go func() {
		defer close(graphDone)
		if err := graph.Run(ctx, c.client(t, pki.APIServerClientIdentity), slog.New(slog.DiscardHandler)); err != nil && ctx.Err() == nil {
			t.Errorf("graph: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-graphDone }) // cleanups run last-first: this one runs before the listener closes
	return c
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// client talks to the cluster with a client certificate for id.
func (c *cluster) client(t *testing.T, id pki.Identity) kubernetes.Interface {
	t.Helper()
	kc, err := c.pki.ClientKubeconfig(c.url, id)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 30 * time.Second
	return kubernetes.NewForConfigOrDie(cfg)
}

// anonymous talks to the cluster with no credentials, trusting its CA.
func (c *cluster) anonymous(t *testing.T) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: c.url, Timeout: 30 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.ServerCA.CertPEM}})
}

func (c *cluster) revision(t *testing.T) int64 {
	t.Helper()
	rev, err := c.store.CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// waitFor polls cond until it holds or the test's patience ends.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func allocatable() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
}

// register makes a node register itself as an agent does: the object, then its status.
func register(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("%s registers itself: %v", name, err)
	}
	n.Status.Allocatable, n.Status.Capacity = allocatable(), allocatable()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("%s reports its status: %v", name, err)
	}
}

// podUsing is a pod bound to nodeName that mounts secret and takes env from configMap.
func podUsing(name, nodeName, secret, configMap string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: map[string]string{
			node.PrivateAnnotationPrefix + "hint": "for berth only", publicAnnotation: "for all",
		}},
		Spec: corev1.PodSpec{
			NodeName:           nodeName,
			ServiceAccountName: "default",
			Volumes:            []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
			Containers: []corev1.Container{{Name: "c", Image: "busybox", EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}},
			}}},
		},
	}
}

const publicAnnotation = "example.com/owner"

// nodeView checks that pod is as a node must see it: no managedFields, no
// berth-private annotations, the public ones kept. With asStored it checks
// the opposite: everything there.
func nodeView(pod *corev1.Pod, asStored bool) error {
	private := 0
	for k := range pod.Annotations {
		if strings.HasPrefix(k, node.PrivateAnnotationPrefix) {
			private++
		}
	}
	hidden := len(pod.ManagedFields) == 0 && private == 0
	switch {
	case pod.Annotations[publicAnnotation] == "":
		return fmt.Errorf("pod %s lost its public annotation: %v", pod.Name, pod.Annotations)
	case asStored && hidden:
		return fmt.Errorf("pod %s is missing managedFields or private annotations: %d, %v", pod.Name, len(pod.ManagedFields), pod.Annotations)
	case !asStored && !hidden:
		return fmt.Errorf("node sees pod %s with %d managedFields and annotations %v", pod.Name, len(pod.ManagedFields), pod.Annotations)
	}
	return nil
}

// csrFor is a node client certificate request for name.
func csrFor(t *testing.T, csrName, nodeName string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, _, err := pki.NewKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: node.UserPrefix + nodeName, Organization: []string{"system:nodes"}},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: csrName},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
}
