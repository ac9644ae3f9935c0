package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func TestPodCreateAppliesUpstreamDefaults(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	created, err := s.client.CoreV1().Pods("default").Create(ctx, testPod("p1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Fatalf("system fields not set: uid=%q rv=%q ts=%v", created.UID, created.ResourceVersion, created.CreationTimestamp)
	}
	got, err := s.client.CoreV1().Pods("default").Get(ctx, "p1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	spec := got.Spec
	c := spec.Containers[0]
	checks := map[string][2]any{
		"restartPolicy":            {spec.RestartPolicy, corev1.RestartPolicyAlways},
		"dnsPolicy":                {spec.DNSPolicy, corev1.DNSClusterFirst},
		"terminationGracePeriod":   {*spec.TerminationGracePeriodSeconds, int64(30)},
		"schedulerName":            {spec.SchedulerName, "default-scheduler"},
		"enableServiceLinks":       {*spec.EnableServiceLinks, true},
		"imagePullPolicy":          {c.ImagePullPolicy, corev1.PullAlways},
		"terminationMessagePath":   {c.TerminationMessagePath, "/dev/termination-log"},
		"terminationMessagePolicy": {c.TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		"phase":                    {got.Status.Phase, corev1.PodPending},
		"qosClass":                 {got.Status.QOSClass, corev1.PodQOSBestEffort},
		"tolerations":              {len(spec.Tolerations), 2},
		"resourceVersion":          {got.ResourceVersion, created.ResourceVersion},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	if spec.SecurityContext == nil {
		t.Errorf("securityContext not defaulted")
	}
}
