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
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/berth/berth/internal/admission/noderestriction"
	"github.com/berth/berth/internal/agent/join"
	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/auth"
	"github.com/berth/berth/internal/auth/audit"
	"github.com/berth/berth/internal/auth/bootstraptoken"
	"github.com/berth/berth/internal/auth/node"
	"github.com/berth/berth/internal/auth/rbac"
	"github.com/berth/berth/internal/controller/certificates"
	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/testkit/etcdtest"
	"github.com/berth/berth/internal/testkit/wait"
)

// cluster is a berth API server over a real embedded etcd, served over TLS
// on loopback with berth's real authentication (client certificates and
// bootstrap tokens from kube-system Secrets), authorizer chain (Node
// authorizer included, its graph fed through the server as system:apiserver;
// RBAC with the default roles), NodeRestriction admission and audit log:
// the wiring of internal/server, without the controllers, so that the
// store's revision moves only by the test's writes. Nodes join through the
// CSR approver and signer, which runs only while they join (joinNodes).
type cluster struct {
	store    store.Interface
	pki      *pki.Cluster
	url      string
	graph    *node.Graph
	logs     *recorder // the server's warnings (refused tokens among them)
	auditLog string    // path of the audit log
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	certs, err := pki.LoadOrCreateCluster(t.TempDir(), pki.DefaultServingNames(nil))
	if err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{store: etcdtest.New(t), pki: certs, url: "https://" + listener.Addr().String(), graph: node.NewGraph(),
		logs: &recorder{t: t}, auditLog: filepath.Join(t.TempDir(), "audit.log")}
	log := c.logger()

	// What the server reads through its own API, as internal/server does:
	// bootstrap-token Secrets, RBAC objects and Nodes.
	self := c.client(t, pki.APIServerClientIdentity)
	nodes := informers.NewSharedInformerFactory(self, 0)
	secrets := informers.NewSharedInformerFactoryWithOptions(self, 0, informers.WithNamespace(metav1.NamespaceSystem))
	tokens := bootstraptoken.NewAuthenticator(secrets.Core().V1().Secrets().Lister().Secrets(metav1.NamespaceSystem), log)
	roles := rbac.NewInformers(self)
	authz, err := auth.NewAuthorizer(node.NewAuthorizer(c.graph), append(auth.BootstrapPolicy(), rbac.ComponentBindings()...), rbac.NewAuthorizer(roles.Listers, roles.HasSynced))
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(certs.ClientCA.Cert)
	auditLog, err := audit.Open(c.auditLog, audit.Rotation{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = auditLog.Close() })
	// The graph reads pods from the watch cache, as internal/server's does.
	local := apiserver.NewLocalReads()
	handler, err := apiserver.New(ctx, apiserver.Config{
		LocalReads:    local,
		Store:         c.store,
		Authenticator: auth.NewAuthenticator(clientCAs, tokens),
		Authorizer:    authz,
		Admission:     noderestriction.New(c.graph, nodes.Core().V1().Nodes().Lister()),
		ReadView:      node.PodView,
		AuditSink:     auditLog.Sink(), AuditPolicy: auditLog.Policy(),
		Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := tls.LoadX509KeyPair(certs.ServingCertFile, certs.ServingKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	// Handshake failures (a client certificate the client CA did not sign,
	// or expired) are logged through net/http's error log, as in internal/server.
	srv := &httptest.Server{Listener: listener, Config: &http.Server{Handler: handler, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}}
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{serving}, ClientCAs: clientCAs, ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	// Cleanups run last-first: these stop the watchers before the listener closes.
	secrets.Start(ctx.Done())
	nodes.Start(ctx.Done())
	t.Cleanup(func() { cancel(); secrets.Shutdown() })
	background(ctx, t, "RBAC informers", func(ctx context.Context) error { roles.Run(ctx); return nil })
	apiserverUser := &user.DefaultInfo{Name: pki.APIServerClientIdentity.CommonName, Groups: pki.APIServerClientIdentity.Organizations}
	pods, err := local.ListWatch(ctx, apiserverUser, corev1.SchemeGroupVersion.WithResource("pods"))
	if err != nil {
		t.Fatal(err)
	}
	background(ctx, t, "graph", func(ctx context.Context) error { return c.graph.Run(ctx, self, pods, slog.New(slog.DiscardHandler)) })
	t.Cleanup(cancel) // runs before the waits above
	if err := rbac.EnsureDefaults(ctx, c.client(t, pki.AdminIdentity), log); err != nil {
		t.Fatalf("default RBAC roles: %v", err)
	}
	wait.Until(t, time.Minute, "the RBAC informers", roles.HasSynced)
	return c
}

// background runs fn until ctx ends; the test's cleanup waits for it.
func background(ctx context.Context, t *testing.T, what string, fn func(context.Context) error) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("%s: %v", what, err)
		}
	}()
	t.Cleanup(func() { <-done })
}

// recorder keeps what the server logs and passes it to the test log.
type recorder struct {
	t    testing.TB
	mu   sync.Mutex
	text strings.Builder
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.text.Write(p)
	r.mu.Unlock()
	r.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text.String()
}

// joinNodes joins each named node as a real agent does (internal/agent/join):
// a bootstrap token of its own, the CA pin checked, a CSR approved and
// signed by the certificates controller, which runs only until all have
// joined. It returns each node's client, authenticated by its own
// certificate.
func (c *cluster) joinNodes(t *testing.T, names ...string) map[string]kubernetes.Interface {
	t.Helper()
	defer c.runCertificates(t)()
	admin := c.client(t, pki.AdminIdentity)
	joined := map[string]kubernetes.Interface{}
	for _, name := range names {
		joined[name] = c.join(t, name, c.newToken(t, admin, time.Hour))
	}
	return joined
}

// join runs the agent's join for name with token into a fresh directory.
func (c *cluster) join(t *testing.T, name string, token *bootstraptoken.JoinToken) kubernetes.Interface {
	t.Helper()
	kubeconfig, err := c.tryJoin(t, name, token)
	if err != nil {
		t.Fatalf("%s joins: %v", name, err)
	}
	return c.kubeconfigClient(t, kubeconfig)
}

func (c *cluster) tryJoin(t *testing.T, name string, token *bootstraptoken.JoinToken) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return join.Ensure(ctx, join.Config{Server: c.url, Token: token, NodeName: name, Dir: t.TempDir(), Logger: c.logger()})
}

// runCertificates runs the CSR approver and signer until the returned stop
// is called.
func (c *cluster) runCertificates(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	// As berth server runs it: deciding as its service account, watching as
	// the controller manager.
	decider := c.client(t, pki.Identity{CommonName: "system:serviceaccount:kube-system:" + rbac.CertificateControllerAccount,
		Organizations: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}, Client: true})
	watcher := c.client(t, pki.ControllerIdentity)
	go func() {
		stopped <- certificates.New(certificates.Config{Client: decider, InformerClient: watcher, CA: c.pki.ClientCA, Logger: c.logger()}).Run(ctx)
	}()
	return func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("certificates controller: %v", err)
		}
	}
}

// logger writes warnings and worse to the cluster's log recorder.
func (c *cluster) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newToken stores a bootstrap token valid for ttl from now (negative: already
// expired), as `berth token create` does, and returns it as a join token
// pinned to the cluster's CA.
func (c *cluster) newToken(t *testing.T, admin kubernetes.Interface, ttl time.Duration) *bootstraptoken.JoinToken {
	t.Helper()
	now := time.Now()
	if ttl < 0 {
		now, ttl = now.Add(2*ttl), -ttl
	}
	tok, err := bootstraptoken.Create(context.Background(), admin, ttl, "e2e", now)
	if err != nil {
		t.Fatal(err)
	}
	return &bootstraptoken.JoinToken{CAHash: pki.PublicKeyHash(c.pki.ServerCA.Cert), Token: tok.String()}
}

// kubeconfigClient is a client from a kubeconfig file.
func (c *cluster) kubeconfigClient(t *testing.T, path string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return newClient(cfg)
}

// newClient is a client of cfg with a 30 s timeout and no client-side rate
// limit: a test sends a hundred requests through one client, which
// client-go's default limit (5 a second after a burst of 10) would space
// 200 ms apart, for nothing the tests check.
func newClient(cfg *rest.Config) kubernetes.Interface {
	cfg.Timeout = 30 * time.Second
	cfg.QPS = -1
	return kubernetes.NewForConfigOrDie(cfg)
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
	return newClient(cfg)
}

// anonymous talks to the cluster with no credentials, trusting its CA.
func (c *cluster) anonymous(t *testing.T) kubernetes.Interface {
	t.Helper()
	return newClient(&rest.Config{Host: c.url, TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.ServerCA.CertPEM}})
}

func (c *cluster) revision(t *testing.T) int64 {
	t.Helper()
	rev, err := c.store.CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func allocatable() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
}

// register makes a node register itself as an agent does: the object, then its status.
func register(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%s registers itself: %v", name, err)
	}
	// The server's controllers may write the new Node too: a stale update
	// is read again and retried, as agents do.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Allocatable, n.Status.Capacity = allocatable(), allocatable()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
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
