package server

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/wait"
)

// As kube-apiserver's --allow-privileged: without it a privileged container
// is refused by validation with upstream's cause, even where Pod Security
// would allow it; with it, the namespace's Pod Security level decides.
func TestAllowPrivilegedAdmitsPrivilegedContainers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args  []string
		admit bool
	}{{nil, false}, {[]string{"--allow-privileged"}, true}} {
		cs := cluster.Start(t, berthBin, cluster.Options{Args: tc.args}).Admin
		_, err := privilegedPodIn(t, cs)
		switch {
		case tc.admit && err != nil:
			t.Errorf("with %v: privileged pod refused: %v", tc.args, err)
		case !tc.admit && !apierrors.IsInvalid(err):
			t.Errorf("with %v: privileged pod got %v, want 422", tc.args, err)
		case !tc.admit:
			causes := err.(apierrors.APIStatus).Status().Details.Causes
			if len(causes) != 1 || causes[0].Field != "spec.containers[0].securityContext.privileged" || causes[0].Message != "Forbidden: disallowed by cluster policy" {
				t.Errorf("with %v: causes %+v, want upstream's one on spec.containers[0].securityContext.privileged", tc.args, causes)
			}
		}
	}
}

// privilegedPodIn creates a privileged pod in a namespace Pod Security
// leaves privileged.
func privilegedPodIn(t *testing.T, cs kubernetes.Interface) (*corev1.Pod, error) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "privileged",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, time.Minute, "the namespace's default service account", func() bool {
		_, err := cs.CoreV1().ServiceAccounts("privileged").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "root"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}}
	return cs.CoreV1().Pods("privileged").Create(ctx, pod, metav1.CreateOptions{})
}
