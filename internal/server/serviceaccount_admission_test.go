package server_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/wait"
)

// startServer runs berth server in-process with no local node.
func startServer(t *testing.T) *cluster.Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return cluster.InProcess(t, "", func(ctx context.Context, dataDir string, port int) error {
		return server.Run(ctx, server.Config{DataDir: dataDir, BindAddress: "127.0.0.1", Port: port, DisableAgent: true, Logger: log})
	})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func createNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// podNamespace creates a namespace pods can be created in: it waits for
// the namespace's default ServiceAccount, without which the ServiceAccount
// plugin refuses pods.
func podNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	createNamespace(t, cs, name)
	waitForDefaultAccount(t, cs.CoreV1().ServiceAccounts(name))
}

// waitForDefaultAccount waits for the namespace's default ServiceAccount.
func waitForDefaultAccount(t *testing.T, accounts interface {
	Get(context.Context, string, metav1.GetOptions) (*corev1.ServiceAccount, error)
}) {
	t.Helper()
	wait.Until(t, time.Minute, "the namespace's default service account", func() bool {
		_, err := accounts.Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil
	})
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers:     []corev1.Container{{Name: "a", Image: "busybox"}, {Name: "b", Image: "busybox"}},
		},
	}
}

// rootCA waits for the namespace's kube-root-ca.crt and returns its ca.crt.
func rootCA(t *testing.T, cs kubernetes.Interface, ns, why string) string {
	t.Helper()
	var got string
	wait.Until(t, time.Minute, why, func() bool {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "kube-root-ca.crt", metav1.GetOptions{})
		if err != nil {
			return false
		}
		got = cm.Data["ca.crt"]
		return got != ""
	})
	return got
}

// Every namespace gets kube-root-ca.crt with the CA that verifies the API
// server (the one in the admin kubeconfig), put back when deleted or changed,
// as kube-controller-manager's publisher does.
func TestRootCAIsPublishedInEveryNamespace(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	serverCA, err := os.ReadFile(filepath.Join(s.DataDir, "pki", "server-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(t, s.Admin, "team-a")
	for _, ns := range []string{"default", "kube-system", "team-a"} {
		if got := rootCA(t, s.Admin, ns, "kube-root-ca.crt in "+ns); !bytes.Equal([]byte(got), serverCA) {
			t.Errorf("%s/kube-root-ca.crt ca.crt is not the server CA:\n%s", ns, got)
		}
	}

	cms := s.Admin.CoreV1().ConfigMaps("team-a")
	if _, err := cms.Patch(ctx, "kube-root-ca.crt", types.MergePatchType, []byte(`{"data":{"ca.crt":"forged"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, time.Minute, "a changed kube-root-ca.crt to be put back", func() bool {
		cm, err := cms.Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil && cm.Data["ca.crt"] == string(serverCA)
	})
	if err := cms.Delete(ctx, "kube-root-ca.crt", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := rootCA(t, s.Admin, "team-a", "a deleted kube-root-ca.crt to be recreated"); got != string(serverCA) {
		t.Errorf("recreated ca.crt %q", got)
	}
}

// kube-apiserver's ServiceAccount admission plugin runs on pod creation:
// the default account is filled in, the account must exist, its image pull
// secrets are copied, and kube-api-access-* (a bound token, the root CA
// and the namespace) is mounted into every container unless the pod or the
// account opts out.
func TestServiceAccountAdmissionMountsTheAPIAccessVolume(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	createNamespace(t, s.Admin, "apps")
	pods := s.Admin.CoreV1().Pods("apps")
	// The namespace's default account is created with it; until then the
	// plugin refuses the pod.
	var pod *corev1.Pod
	wait.Until(t, time.Minute, "a pod to be admitted once the default service account exists", func() bool {
		var err error
		pod, err = pods.Create(ctx, testPod("mounted"), metav1.CreateOptions{})
		return err == nil
	})
	if pod.Spec.ServiceAccountName != "default" {
		t.Errorf("serviceAccountName %q, want default", pod.Spec.ServiceAccountName)
	}
	vol := apiAccessVolume(t, pod)
	if vol == nil {
		t.Fatalf("no kube-api-access-* volume in %+v", pod.Spec.Volumes)
	}
	checkAPIAccessSources(t, vol)
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if !hasMount(c, vol.Name, "/var/run/secrets/kubernetes.io/serviceaccount") {
			t.Errorf("container %s lacks the read-only mount of %s: %+v", c.Name, vol.Name, c.VolumeMounts)
		}
	}

	optOut := testPod("opted-out")
	optOut.Spec.AutomountServiceAccountToken = ptr.To(false)
	if pod, err := pods.Create(ctx, optOut, metav1.CreateOptions{}); err != nil || apiAccessVolume(t, pod) != nil {
		t.Errorf("automountServiceAccountToken: false: err %v, volumes %+v", err, pod.Spec.Volumes)
	}

	sas := s.Admin.CoreV1().ServiceAccounts("apps")
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{
		ObjectMeta:                   metav1.ObjectMeta{Name: "builder"},
		AutomountServiceAccountToken: ptr.To(false),
		ImagePullSecrets:             []corev1.LocalObjectReference{{Name: "registry"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	built := testPod("built")
	built.Spec.ServiceAccountName = "builder"
	pod, err := pods.Create(ctx, built, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if apiAccessVolume(t, pod) != nil || len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "registry" {
		t.Errorf("account without automount, with a pull secret: volumes %+v, imagePullSecrets %+v", pod.Spec.Volumes, pod.Spec.ImagePullSecrets)
	}

	missing := testPod("orphan")
	missing.Spec.ServiceAccountName = "nobody"
	_, err = pods.Create(ctx, missing, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `error looking up service account apps/nobody: serviceaccount "nobody" not found`) {
		t.Errorf("pod of a missing account: %v; want 403 naming the account", err)
	}
	if _, err := pods.Get(ctx, "orphan", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("refused pod was stored: %v", err)
	}
}

func apiAccessVolume(t *testing.T, pod *corev1.Pod) *corev1.Volume {
	t.Helper()
	for i, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// checkAPIAccessSources checks the volume holds what upstream's plugin puts
// there: a token of an hour and 7 s, ca.crt from kube-root-ca.crt and the
// namespace from the downward API.
func checkAPIAccessSources(t *testing.T, vol *corev1.Volume) {
	t.Helper()
	if vol.Projected == nil || len(vol.Projected.Sources) != 3 {
		t.Fatalf("volume %s: %+v, want a projection of three sources", vol.Name, vol.VolumeSource)
	}
	src := vol.Projected.Sources
	var got []string
	if tok := src[0].ServiceAccountToken; tok != nil {
		got = append(got, fmt.Sprintf("token %s %d", tok.Path, ptr.Deref(tok.ExpirationSeconds, 0)))
	}
	if cm := src[1].ConfigMap; cm != nil && len(cm.Items) == 1 {
		got = append(got, fmt.Sprintf("configMap %s %s", cm.Name, cm.Items[0].Path))
	}
	if d := src[2].DownwardAPI; d != nil && len(d.Items) == 1 && d.Items[0].FieldRef != nil {
		got = append(got, fmt.Sprintf("downwardAPI %s %s", d.Items[0].Path, d.Items[0].FieldRef.FieldPath))
	}
	want := []string{"token token 3607", "configMap kube-root-ca.crt ca.crt", "downwardAPI namespace metadata.namespace"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("sources %q, want %q", got, want)
	}
}

func hasMount(c corev1.Container, volume, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.Name == volume && m.MountPath == path && m.ReadOnly {
			return true
		}
	}
	return false
}
