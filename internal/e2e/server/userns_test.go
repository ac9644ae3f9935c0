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

// checkOwnUsersPod runs a pod with hostUsers: false through the whole
// cluster: the agent gives it the node's first range of host IDs, the
// runtime a user namespace mapping root onto it, and its volumes (an
// emptyDir and a configMap, which the agent makes as the host's root) are
// the pod's root's inside and the host's root's on the host.
func checkOwnUsersPod(t *testing.T, cs kubernetes.Interface, srv *cluster.Server) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "own-users"}, Data: map[string]string{"key": "value"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hostUsers, grace := false, int64(1)
	script := `cat /proc/self/uid_map; id -u; stat -c %u:%g /cfg/key; echo hi > /data/f && stat -c %u /data/f; exec sleep 3600`
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "own-users"}, Spec: corev1.PodSpec{
		HostUsers: &hostUsers, TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{Name: "main", Image: images.Busybox, Command: []string{"sh", "-c", script},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "cfg", MountPath: "/cfg"}}}},
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "own-users"}}}},
		},
	}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPod(t, cs, "own-users", func(p *corev1.Pod) bool { return podReady(p) })
	fields := strings.Fields(srv.Kubectl(t, "", "logs", "own-users"))
	want := []string{"0", "65536", "65536", "0", "0:0", "0"}
	if strings.Join(fields, " ") != strings.Join(want, " ") {
		t.Errorf("own-users logged %q, want %q: root mapped on host ID 65536, volumes the pod root's", fields, want)
	}
	srv.Kubectl(t, "", "delete", "pod", "own-users", "--grace-period=1")
	srv.Kubectl(t, "", "delete", "configmap", "own-users")
}
