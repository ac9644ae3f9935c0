package podsecurity_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/ports"
	"github.com/berth/berth/internal/testkit/wait"
)

// berth is a real `berth server` (in-process, no local agent: pods are
// admitted and stored, never run).
type berth struct {
	t       *testing.T
	dataDir string
	url     string
	admin   *rest.Config
}

func startBerth(t *testing.T, admissionConfig string) *berth {
	t.Helper()
	dataDir, port := t.TempDir(), ports.Free(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		// Privileged containers allowed by the API, as upstream's Pod
		// Security integration tests run kube-apiserver, so that Pod
		// Security alone decides (the setting is process-wide: every
		// server of these tests has it).
		done <- server.Run(ctx, server.Config{DataDir: dataDir, BindAddress: "127.0.0.1", Port: port, DisableAgent: true, AllowPrivileged: true,
			AuditLogPath: filepath.Join(dataDir, "audit.log"), AdmissionControlConfigFile: admissionConfig,
			Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	}()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("server: %v", err)
			}
		})
	})
	b := &berth{t: t, dataDir: dataDir, url: "https://127.0.0.1:" + strconv.Itoa(port)}
	wait.Until(t, 2*time.Minute, "the admin kubeconfig, and the edit role among the default roles", func() bool {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig"))
		if err != nil {
			return false
		}
		_, err = kubernetes.NewForConfigOrDie(cfg).RbacV1().ClusterRoles().Get(context.Background(), "edit", metav1.GetOptions{})
		b.admin = cfg
		return err == nil
	})
	return b
}

// configFor is a client configuration with a certificate for id.
func (b *berth) configFor(id pki.Identity) *rest.Config {
	b.t.Helper()
	cluster, err := pki.LoadOrCreateCluster(filepath.Join(b.dataDir, "pki"), pki.DefaultServingNames([]string{"127.0.0.1"}))
	if err != nil {
		b.t.Fatal(err)
	}
	kc, err := cluster.ClientKubeconfig(b.url, id)
	if err != nil {
		b.t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		b.t.Fatal(err)
	}
	return cfg
}

// warnings collects a client's Warning headers.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(code int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if code == 299 {
		w.list = append(w.list, text)
	}
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

func clientWithWarnings(t *testing.T, cfg *rest.Config) (kubernetes.Interface, *warnings) {
	t.Helper()
	w := &warnings{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = w
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

// grantEdit binds the edit role to user in namespace ns.
func grantEdit(t *testing.T, admin kubernetes.Interface, ns, user string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer reads RBAC through informers, as kube-apiserver's does:
	// the binding takes effect when the server has seen it.
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}}}
	wait.UntilNil(t, time.Minute, "the authorizer to let "+user+" create pods in "+ns, func() error {
		got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !got.Status.Allowed {
			return fmt.Errorf("not allowed yet: %q", got.Status.Reason)
		}
		return nil
	})
}

// createNamespace creates namespace name and waits for its default service
// account: the service account controller makes it after the namespace, and
// until then the ServiceAccount admission plugin refuses pods with a 403, as
// kube-apiserver's does (the e2e framework waits for it the same way).
func createNamespace(t *testing.T, c kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilNil(t, time.Minute, "the default service account of namespace "+name, func() error {
		_, err := c.CoreV1().ServiceAccounts(name).Get(context.Background(), "default", metav1.GetOptions{})
		return err
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
