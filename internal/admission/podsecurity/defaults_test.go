package podsecurity_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/testkit/wait"
)

// stealCAKey is what baseline exists to stop: a pod mounting the server's
// data directory (its CA keys) from the node.
func stealCAKey(dataDir string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "steal"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"cat", "/host/pki/client-ca.key"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/host"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dataDir}}}},
		},
	}
}

// unhardened meets baseline, not restricted: no securityContext at all.
func unhardened() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// With no configuration, a user who may edit a namespace cannot reach the
// node's files through a hostPath volume; a pod that only misses
// restricted's hardening is created with warnings; kube-system is exempt
// and a namespace labelled privileged opts out.
func TestDefaultPolicy(t *testing.T) {
	b := startBerth(t, "")
	ctx := context.Background()
	admin, adminWarnings := clientWithWarnings(t, b.admin)
	createNamespace(t, admin, "team", nil)
	grantEdit(t, admin, "team", "dev")
	dev, devWarnings := clientWithWarnings(t, b.configFor(pki.Identity{CommonName: "dev", Client: true}))

	_, err := dev.CoreV1().Pods("team").Create(ctx, stealCAKey(b.dataDir), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("hostPath pod as an editor: want 403 Forbidden, got %v", err)
	}
	status := err.(apierrors.APIStatus).Status()
	want := `pods "steal" is forbidden: violates PodSecurity "baseline:latest": hostPath volumes (volume "data")`
	if status.Code != http.StatusForbidden || status.Message != want {
		t.Errorf("refusal: code %d message %q, want 403 %q", status.Code, status.Message, want)
	}
	if _, err := admin.CoreV1().Pods("team").Get(ctx, "steal", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused pod: want NotFound, got %v", err)
	}

	devWarnings.take()
	if _, err := dev.CoreV1().Pods("team").Create(ctx, unhardened(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a baseline pod as an editor: %v", err)
	}
	got := devWarnings.take()
	if len(got) != 1 || !strings.HasPrefix(got[0], `would violate PodSecurity "restricted:latest": `) || !strings.Contains(got[0], "runAsNonRoot != true") {
		t.Errorf("Warning headers %q: want one restricted:latest violation", got)
	}
	audit := readFile(t, b.dataDir+"/audit.log")
	if !strings.Contains(audit, `"pod-security.kubernetes.io/audit-violations":"would violate PodSecurity \"restricted:latest\"`) ||
		!strings.Contains(audit, `"pod-security.kubernetes.io/enforce-policy":"baseline:latest"`) {
		t.Errorf("the audit log lacks the pod security annotations:\n%s", audit)
	}

	// kube-system is exempt: no refusal, no warning.
	adminWarnings.take()
	if _, err := admin.CoreV1().Pods("kube-system").Create(ctx, stealCAKey(b.dataDir), metav1.CreateOptions{}); err != nil {
		t.Errorf("hostPath pod in kube-system: %v", err)
	}
	if w := adminWarnings.take(); len(w) != 0 {
		t.Errorf("kube-system: warnings %q", w)
	}

	// A namespace labelled privileged opts out of enforcement.
	createNamespace(t, admin, "infra", map[string]string{"pod-security.kubernetes.io/enforce": "privileged"})
	if _, err := admin.CoreV1().Pods("infra").Create(ctx, stealCAKey(b.dataDir), metav1.CreateOptions{}); err != nil {
		t.Errorf("hostPath pod in a privileged namespace: %v", err)
	}
	// Tightening it again warns about the pod that would now be refused.
	ns, err := admin.CoreV1().Namespaces().Get(ctx, "infra", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	adminWarnings.take()
	wait.Until(t, 2*time.Minute, "the pod security informer to see infra's pod", func() bool {
		if _, err := admin.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(strings.Join(adminWarnings.take(), "\n"), `existing pods in namespace "infra" violate the new PodSecurity enforce level "baseline:latest"`)
	})

	checkMetrics(t, admin)
}

func checkMetrics(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	body, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").Stream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, series := range []string{
		`pod_security_evaluations_total{decision="deny",mode="enforce",policy_level="baseline",policy_version="latest",request_operation="create",resource="pod",subresource=""}`,
		`pod_security_exemptions_total{request_operation="create",resource="pod",subresource=""}`,
	} {
		if !strings.Contains(string(data), series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
}
