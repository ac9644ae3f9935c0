package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/wait"
)

// checkWorkloads runs a Deployment and a Job on the node, through the
// server's upstream controllers and the real agent: the Deployment's pod
// runs and the Deployment reports it available; the Job's pod exits 0 and
// the Job completes. Both are then deleted with their pods.
func checkWorkloads(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	grace := int64(1)
	selector := map[string]string{"app": "e2e-web"}
	deployments := cs.AppsV1().Deployments("default")
	if _, err := deployments.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "e2e-web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector}, Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: &grace,
				Containers:                    []corev1.Container{{Name: "main", Image: images.Busybox, Command: []string{"sleep", "3600"}}},
			}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobs := cs.BatchV1().Jobs("default")
	if _, err := jobs.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "e2e-job"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "main", Image: images.Busybox, Command: []string{"sh", "-c", "echo done"}}},
		}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.UntilCtx(t, 3*time.Minute, "Deployment e2e-web available with its pod running", func(ctx context.Context) error {
		d, err := deployments.Get(ctx, "e2e-web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 1 || d.Status.ObservedGeneration != d.Generation {
			return fmt.Errorf("status %+v", d.Status)
		}
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: labels.Set(selector).String()})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pods %v, %v", pods, err)
		}
		return nil
	})
	wait.UntilCtx(t, 3*time.Minute, "Job e2e-job complete", func(ctx context.Context) error {
		j, err := jobs.Get(ctx, "e2e-job", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue && j.Status.Succeeded == 1 {
				return nil
			}
		}
		return fmt.Errorf("status %+v", j.Status)
	})
	background := metav1.DeletePropagationBackground
	if err := deployments.Delete(ctx, "e2e-web", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Delete(ctx, "e2e-job", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	wait.UntilCtx(t, 2*time.Minute, "the Deployment's and the Job's pods gone", func(ctx context.Context) error {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Labels["app"] == "e2e-web" || p.Labels[batchv1.JobNameLabel] == "e2e-job" {
				return fmt.Errorf("pod %s still there", p.Name)
			}
		}
		return nil
	})
}
