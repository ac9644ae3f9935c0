package server_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/wait"
)

// Upstream's Deployment and ReplicaSet controllers run in the server: a
// Deployment gets a ReplicaSet it owns, which gets pods it owns; scaling
// the Deployment through its scale subresource changes the pod count; and
// deleting it removes the ReplicaSet and the pods through the garbage
// collector, in the background and in the foreground.
func TestDeploymentOwnsReplicaSetOwnsPods(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	podNamespace(t, s.Admin, "deploy")
	deployments := s.Admin.AppsV1().Deployments("deploy")
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		name := "web-" + strings.ToLower(string(policy))
		d, err := deployments.Create(ctx, webDeployment(name, 2), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		var rs *appsv1.ReplicaSet
		wait.UntilNil(t, time.Minute, "the Deployment's ReplicaSet", func() error {
			rs, err = ownedReplicaSet(ctx, s.Admin, d)
			return err
		})
		wait.UntilNil(t, time.Minute, "the ReplicaSet's 2 pods", ownedPods(ctx, s.Admin, "deploy", name, rs.UID, 2))
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			scale, err := deployments.GetScale(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			scale.Spec.Replicas = 3
			_, err = deployments.UpdateScale(ctx, name, scale, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatalf("scale to 3: %v", err)
		}
		wait.UntilNil(t, time.Minute, "a third pod after scaling the Deployment to 3", ownedPods(ctx, s.Admin, "deploy", name, rs.UID, 3))
		if err := deployments.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			t.Fatalf("delete (%s): %v", policy, err)
		}
		wait.UntilNil(t, time.Minute, fmt.Sprintf("the Deployment, its ReplicaSet and its pods gone (%s)", policy), func() error {
			if _, err := deployments.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("deployment: %v", err)
			}
			if _, err := s.Admin.AppsV1().ReplicaSets("deploy").Get(ctx, rs.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("replicaset: %v", err)
			}
			pods, err := s.Admin.CoreV1().Pods("deploy").List(ctx, metav1.ListOptions{LabelSelector: labels.Set{"app": name}.String()})
			if err != nil || len(pods.Items) != 0 {
				return fmt.Errorf("pods: %d left, %v", len(pods.Items), err)
			}
			return nil
		})
	}
}

// Upstream's StatefulSet and DaemonSet controllers run in the server: a
// StatefulSet gets its first ordinal pod, and a DaemonSet records its
// revision (no node is registered, so it has no pod to run).
func TestStatefulSetAndDaemonSetControllersRun(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	podNamespace(t, s.Admin, "sets")
	d := webDeployment("db", 1)
	ss, err := s.Admin.AppsV1().StatefulSets("sets").Create(ctx, &appsv1.StatefulSet{ObjectMeta: d.ObjectMeta,
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: d.Spec.Selector, Template: d.Spec.Template}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create statefulset: %v", err)
	}
	wait.UntilNil(t, time.Minute, "the StatefulSet's pod db-0", func() error {
		pod, err := s.Admin.CoreV1().Pods("sets").Get(ctx, "db-0", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != ss.UID {
			return fmt.Errorf("db-0 is not controlled by the StatefulSet: %v", pod.OwnerReferences)
		}
		return nil
	})
	agent := webDeployment("agent", 1)
	ds, err := s.Admin.AppsV1().DaemonSets("sets").Create(ctx, &appsv1.DaemonSet{ObjectMeta: agent.ObjectMeta,
		Spec: appsv1.DaemonSetSpec{Selector: agent.Spec.Selector, Template: agent.Spec.Template}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create daemonset: %v", err)
	}
	wait.UntilNil(t, time.Minute, "the DaemonSet's status observed and a ControllerRevision it owns", func() error {
		got, err := s.Admin.AppsV1().DaemonSets("sets").Get(ctx, "agent", metav1.GetOptions{})
		if err != nil || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("status %+v, %v", got.Status, err)
		}
		revs, err := s.Admin.AppsV1().ControllerRevisions("sets").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, r := range revs.Items {
			if ref := metav1.GetControllerOf(&r); ref != nil && ref.UID == ds.UID {
				return nil
			}
		}
		return fmt.Errorf("%d revisions, none owned by the DaemonSet", len(revs.Items))
	})
}

// ownedReplicaSet is the one ReplicaSet controlled by d.
func ownedReplicaSet(ctx context.Context, cs kubernetes.Interface, d *appsv1.Deployment) (*appsv1.ReplicaSet, error) {
	list, err := cs.AppsV1().ReplicaSets(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{"app": d.Name}.String()})
	if err != nil {
		return nil, err
	}
	if len(list.Items) != 1 {
		return nil, fmt.Errorf("%d replicasets", len(list.Items))
	}
	rs := &list.Items[0]
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID {
		return nil, fmt.Errorf("replicaset %s is not controlled by the Deployment: %v", rs.Name, rs.OwnerReferences)
	}
	return rs, nil
}

// ownedPods checks that want live pods labelled app=app exist, each
// controlled by owner.
func ownedPods(ctx context.Context, cs kubernetes.Interface, namespace, app string, owner types.UID, want int) func() error {
	return func() error {
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{"app": app}.String()})
		if err != nil {
			return err
		}
		live := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != owner {
				return fmt.Errorf("pod %s is not controlled by %s: %v", p.Name, owner, p.OwnerReferences)
			}
			live++
		}
		if live != want {
			return fmt.Errorf("%d live pods", live)
		}
		return nil
	}
}

// webDeployment is a Deployment of busybox pods labelled app=name.
func webDeployment(name string, replicas int32) *appsv1.Deployment {
	selector := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
	}
}

// Upstream's Job controller runs in the server: a Job gets its pod, owned
// by it and tracked with the Job's finalizer, and counts it active.
func TestJobCreatesItsPod(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	podNamespace(t, s.Admin, "jobs")
	template := webDeployment("pi", 1).Spec.Template
	template.Spec.RestartPolicy = corev1.RestartPolicyNever
	job, err := s.Admin.BatchV1().Jobs("jobs").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi"},
		Spec: batchv1.JobSpec{Template: template}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create job: %v", err)
	}
	wait.UntilNil(t, time.Minute, "the Job's pod, with the Job's tracking finalizer", func() error {
		if err := ownedPods(ctx, s.Admin, "jobs", "pi", job.UID, 1)(); err != nil {
			return err
		}
		pods, err := s.Admin.CoreV1().Pods("jobs").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=pi"})
		if err != nil || len(pods.Items) != 1 || !slices.Contains(pods.Items[0].Finalizers, batchv1.JobTrackingFinalizer) {
			return fmt.Errorf("pods %v, %v", pods, err)
		}
		return nil
	})
	wait.UntilNil(t, time.Minute, "the Job's status to count its active pod", func() error {
		got, err := s.Admin.BatchV1().Jobs("jobs").Get(ctx, "pi", metav1.GetOptions{})
		if err != nil || got.Status.Active != 1 || got.Status.StartTime == nil {
			return fmt.Errorf("status %+v, %v", got.Status, err)
		}
		return nil
	})
}
