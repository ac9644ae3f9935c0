package pods

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/wait"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestVolumesReachContainers(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	cm, err := h.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"},
		Data:       map[string]string{"app.conf": "v1", "ignored": "x"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: "default"},
		Data:       map[string][]byte{"key": []byte("private")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.startAgent()
	hostDir := t.TempDir()
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	size := resource.MustParse("8Mi")
	writer := busybox("writer", "sh", "-c", "echo shared-data >/shared/file; sleep 3600")
	writer.VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	reader := busybox("reader", "sleep", "3600")
	reader.VolumeMounts = []corev1.VolumeMount{
		{Name: "shared", MountPath: "/shared"},
		{Name: "config", MountPath: "/etc/app"},
		{Name: "secret", MountPath: "/etc/secret"},
		{Name: "info", MountPath: "/etc/podinfo"},
		{Name: "host", MountPath: "/host"},
		{Name: "mem", MountPath: "/mem"},
	}
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "vols", Labels: map[string]string{"tier": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{writer, reader},
			Volumes: []corev1.Volume{
				{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
					Items:                []corev1.KeyToPath{{Key: "app.conf", Path: "app.conf"}},
				}}},
				{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
				{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				}}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir + "/sub", Type: &dirOrCreate}}},
			},
		},
	})
	p := h.waitPod(pod, "Running and Ready", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	id := h.containerID(p, "reader")
	read := func(path string) string { return h.exec(id, "cat", path) }
	var shared string
	if err := wait.PollTrue(ctx, 30*time.Second, "the second container to read the emptyDir file", func(context.Context) (bool, error) {
		r, err := h.ctd.Client.Runtime.ExecSync(ctx, execReq(id, "cat", "/shared/file"))
		shared = string(r.GetStdout())
		return err == nil && r.ExitCode == 0, nil
	}); err != nil || shared != "shared-data\n" {
		t.Fatalf("emptyDir shared between containers: read %q, %v", shared, err)
	}
	for path, want := range map[string]string{
		"/etc/app/app.conf":   "v1",
		"/etc/secret/key":     "private",
		"/etc/podinfo/name":   "vols",
		"/etc/podinfo/labels": `tier="web"`,
	} {
		if got := read(path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if ls := h.exec(id, "ls", "/etc/app"); strings.TrimSpace(ls) != "app.conf" {
		t.Errorf("configMap items projected %q, want only app.conf", ls)
	}
	if out, _ := h.ctd.Client.Runtime.ExecSync(ctx, execReq(id, "sh", "-c", "echo x >/etc/app/new")); out.GetExitCode() == 0 {
		t.Error("configMap volume is writable")
	}
	h.exec(id, "sh", "-c", "echo from-pod >/host/f")
	if data, err := readFile(hostDir + "/sub/f"); err != nil || data != "from-pod\n" {
		t.Errorf("hostPath write reached host as %q, %v", data, err)
	}
	if mounts := h.exec(id, "cat", "/proc/mounts"); !strings.Contains(mounts, "tmpfs /mem tmpfs") || !strings.Contains(mounts, "size=8192k") {
		t.Errorf("memory emptyDir not a bounded tmpfs:\n%s", mounts)
	}

	// A changed ConfigMap reaches the mounted file.
	cm.Data["app.conf"] = "v2"
	if _, err := h.client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollTrue(ctx, 30*time.Second, "the updated configmap to reach the file", func(context.Context) (bool, error) {
		return read("/etc/app/app.conf") == "v2", nil
	}); err != nil {
		t.Fatalf("%v; the file holds %q", err, read("/etc/app/app.conf"))
	}
}

func TestMissingConfigMapVolumeKeepsPodCreating(t *testing.T) {
	h := newHarness(t)
	h.startAgent()
	c := busybox("c", "sleep", "3600")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}}
	pod := h.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nocm"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}},
		}}}},
	})
	h.waitPod(pod, "waiting on its volume", func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return p.Status.Phase == corev1.PodPending && w != nil && w.Reason == reasonContainerCreating && strings.Contains(w.Message, `configmap "absent"`)
	})
	if n := len(h.containers(pod.UID)); n != 0 {
		t.Fatalf("%d containers created despite the missing volume", n)
	}
	// Once it exists, the pod starts.
	if _, err := h.client.CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "absent", Namespace: "default"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(backoffInitial)
	h.waitPod(pod, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
}
