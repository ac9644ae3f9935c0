package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/wait"
)

// Upstream's replication manager runs in the server: a ReplicationController
// gets its pods, owned by it, follows a scale change, and its status counts
// them.
func TestReplicationControllerKeepsItsReplicas(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	podNamespace(t, s.Admin, "rc")
	rcs := s.Admin.CoreV1().ReplicationControllers("rc")
	rc, err := rcs.Create(ctx, webController(2), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	ownedPods := func(want int) func() error {
		return func() error {
			pods, err := s.Admin.CoreV1().Pods("rc").List(ctx, metav1.ListOptions{LabelSelector: labels.Set{"app": "web"}.String()})
			if err != nil {
				return err
			}
			live := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					continue
				}
				if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != rc.UID {
					return fmt.Errorf("pod %s is not controlled by the ReplicationController: %v", p.Name, p.OwnerReferences)
				}
				// As in a kube-controller-manager cluster, the write is the controller manager's.
				if len(p.ManagedFields) == 0 || p.ManagedFields[0].Manager != "kube-controller-manager" {
					return fmt.Errorf("pod %s's managedFields are %+v, want the manager kube-controller-manager", p.Name, p.ManagedFields)
				}
				live++
			}
			if live != want {
				return fmt.Errorf("%d live pods", live)
			}
			return nil
		}
	}
	wait.UntilNil(t, time.Minute, "the ReplicationController's 2 pods", ownedPods(2))
	// The manager writes status meanwhile: a stale scale conflicts, so retry.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := rcs.GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = 3
		_, err = rcs.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("scale to 3: %v", err)
	}
	wait.UntilNil(t, time.Minute, "a third pod after scaling to 3", ownedPods(3))
	wait.Until(t, time.Minute, "status.replicas to count 3 pods", func() bool {
		got, err := rcs.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.Replicas == 3 && got.Status.ObservedGeneration == got.Generation
	})
}

// Upstream's LimitRanger and ResourceQuota admission plugins, and the quota
// controller: a namespace's LimitRange fills a container's requests and
// limits and bounds a resize, its ResourceQuota refuses the pod beyond the
// hard count with upstream's message, and status.used counts what exists.
func TestLimitRangesAndQuotasAreEnforced(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	podNamespace(t, s.Admin, "limited")
	core := s.Admin.CoreV1()
	if _, err := core.LimitRanges("limited").Create(ctx, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			Max:            corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.ResourceQuotas("limited").Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Until the quota controller has computed usage, the plugin refuses
	// pods ("status unknown"), as upstream.
	wait.Until(t, time.Minute, "the quota's status.used to be computed", func() bool {
		q, err := core.ResourceQuotas("limited").Get(ctx, "pods", metav1.GetOptions{})
		return err == nil && q.Status.Used != nil
	})
	pod, err := core.Pods("limited").Create(ctx, testPod("first"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("first pod: %v", err)
	}
	c := pod.Spec.Containers[0]
	if c.Resources.Requests.Cpu().String() != "100m" || c.Resources.Limits.Cpu().String() != "200m" {
		t.Errorf("container resources %+v, want the LimitRange's defaults 100m/200m", c.Resources)
	}
	// A resize passes the same plugins: above the LimitRange's max it is
	// refused as a create would be.
	_, err = core.Pods("limited").Patch(ctx, "first", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"2"}}}]}}`), metav1.PatchOptions{}, "resize")
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "maximum cpu usage per Container is 1") {
		t.Fatalf("a resize above the LimitRange's max: %v, want upstream's Forbidden", err)
	}
	big := testPod("too-big")
	big.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	if _, err := core.Pods("limited").Create(ctx, big, metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "maximum cpu usage per Container is 1") {
		t.Fatalf("a container above the LimitRange's max: %v, want upstream's Forbidden", err)
	}
	if _, err := core.Pods("limited").Create(ctx, testPod("second"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("second pod: %v", err)
	}
	_, err = core.Pods("limited").Create(ctx, testPod("third"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2") {
		t.Fatalf("a pod beyond the quota: %v, want upstream's exceeded-quota Forbidden", err)
	}
	if err := core.Pods("limited").Delete(ctx, "second", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, time.Minute, "status.used pods to drop to 1 after a delete", func() bool {
		q, err := core.ResourceQuotas("limited").Get(ctx, "pods", metav1.GetOptions{})
		return err == nil && q.Status.Used.Pods().Value() == 1
	})
}

// A claim gets upstream's kubernetes.io/pvc-protection finalizer
// (StorageObjectInUseProtection admission); deleting it marks it, and the
// protection controller, seeing no pod use it, lets it go.
func TestClaimProtectionFinalizerComesAndGoes(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	claims := s.Admin.CoreV1().PersistentVolumeClaims("default")
	claim, err := claims.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(claim.Finalizers) != 1 || claim.Finalizers[0] != "kubernetes.io/pvc-protection" || claim.Status.Phase != corev1.ClaimPending {
		t.Fatalf("claim finalizers %v phase %q, want [kubernetes.io/pvc-protection] and Pending", claim.Finalizers, claim.Status.Phase)
	}
	if err := claims.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, time.Minute, "the unused claim to be deleted once its finalizer is removed", func() bool {
		_, err := claims.Get(ctx, "data", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// A VolumeAttributesClass gets upstream's kubernetes.io/vac-protection
// finalizer, and the protection controller lets an unused class go.
func TestVolumeAttributesClassProtectionComesAndGoes(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	classes := s.Admin.StorageV1().VolumeAttributesClasses()
	class, err := classes.Create(ctx, &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"},
		DriverName: "csi.example.com", Parameters: map[string]string{"iops": "3000"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(class.Finalizers) != 1 || class.Finalizers[0] != "kubernetes.io/vac-protection" {
		t.Fatalf("class finalizers %v, want [kubernetes.io/vac-protection]", class.Finalizers)
	}
	if err := classes.Delete(ctx, "fast", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, time.Minute, "the unused class to be deleted once its finalizer is removed", func() bool {
		_, err := classes.Get(ctx, "fast", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// Deleting a core/v1 ReplicationController without a propagation policy
// orphans its pods, as upstream (the kind's default policy).
func TestReplicationControllerDeleteOrphansItsPods(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	podNamespace(t, s.Admin, "orphans")
	rcs := s.Admin.CoreV1().ReplicationControllers("orphans")
	if _, err := rcs.Create(ctx, webController(1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := s.Admin.CoreV1().Pods("orphans")
	wait.Until(t, time.Minute, "the controller's pod", func() bool {
		list, err := pods.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 1
	})
	if err := rcs.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, time.Minute, "the controller gone and its pod kept without an owner", func() bool {
		_, err := rcs.Get(ctx, "web", metav1.GetOptions{})
		list, lerr := pods.List(ctx, metav1.ListOptions{})
		return apierrors.IsNotFound(err) && lerr == nil && len(list.Items) == 1 && len(list.Items[0].OwnerReferences) == 0
	})
}

// webController is a ReplicationController "web" of busybox pods labelled app=web.
func webController(replicas int32) *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To(replicas), Selector: map[string]string{"app": "web"},
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
	}
}
