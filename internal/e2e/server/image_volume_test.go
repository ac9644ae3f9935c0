package server

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/images"
)

// checkImageVolumePod runs a pod mounting an image as a volume, pulled
// with pullPolicy Always, whole and by a subPath: the agent pulls it and
// hands the runtime an image mount, and the container sees the image's
// files, read-only.
func checkImageVolumePod(t *testing.T, cs kubernetes.Interface, srv *cluster.Server) {
	t.Helper()
	ctx := context.Background()
	grace := int64(1)
	script := `test -x /image/bin/busybox && echo whole; test -x /image-bin/busybox && echo sub-path; ` +
		`touch /image/written 2>/dev/null && echo writable || echo read-only; exec sleep 3600`
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "image-volume"}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{Name: "main", Image: images.Busybox, Command: []string{"sh", "-c", script},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "image", MountPath: "/image"},
				{Name: "image", MountPath: "/image-bin", SubPath: "bin"},
			}}},
		Volumes: []corev1.Volume{{Name: "image", VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: images.Busybox, PullPolicy: corev1.PullAlways},
		}}},
	}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, cs, "image-volume", podReady)
	got := strings.Fields(srv.Kubectl(t, "", "logs", "image-volume"))
	if want := []string{"whole", "sub-path", "read-only"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("image-volume logged %q, want %q", got, want)
	}
	srv.Kubectl(t, "", "delete", "pod", "image-volume", "--grace-period=1")
}
