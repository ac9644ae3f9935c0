package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/wait"
)

// TestDefaultClassesAndClaimResize: kube-apiserver's DefaultStorageClass,
// PersistentVolumeClaimResize and DefaultIngressClass plugins. A claim or
// an Ingress naming no class gets the default one, and a bound claim grows
// only when its class allows expansion.
func TestDefaultClassesAndClaimResize(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	createNamespace(t, s.Admin, "classes")
	storage := s.Admin.StorageV1().StorageClasses()
	for _, class := range []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "fixed", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
			Provisioner: "example.com/disks", AllowVolumeExpansion: ptr.To(false)},
		{ObjectMeta: metav1.ObjectMeta{Name: "growing"}, Provisioner: "example.com/disks", AllowVolumeExpansion: ptr.To(true)},
	} {
		if _, err := storage.Create(ctx, class, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claims := s.Admin.CoreV1().PersistentVolumeClaims("classes")
	claim := func(name string, class *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	}
	attempt := 0
	var defaulted *corev1.PersistentVolumeClaim
	wait.UntilCtx(t, 30*time.Second, "a claim naming no class to get the default StorageClass", func(ctx context.Context) error {
		attempt++
		got, err := claims.Create(ctx, claim(fmt.Sprintf("unnamed-%d", attempt), nil), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != "fixed" {
			return fmt.Errorf("storageClassName %v, want fixed", got.Spec.StorageClassName)
		}
		defaulted = got
		return nil
	})

	// grow marks the claim bound and asks for more; controllers write
	// claims too (the protection finalizer), hence the retries.
	grow := func(c *corev1.PersistentVolumeClaim) error {
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			c, err := claims.Get(ctx, c.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			c.Status.Phase = corev1.ClaimBound
			_, err = claims.UpdateStatus(ctx, c, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			c, err := claims.Get(ctx, c.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
			_, err = claims.Update(ctx, c, metav1.UpdateOptions{})
			return err
		})
	}
	if err := grow(defaulted); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "the storageclass that provisions the pvc must support resize") {
		t.Errorf("growing a claim whose class does not allow expansion: %v, want upstream's Forbidden", err)
	}
	growing, err := claims.Create(ctx, claim("growing", ptr.To("growing")), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := grow(growing); err != nil {
		t.Errorf("growing a claim whose class allows expansion: %v", err)
	}

	if _, err := s.Admin.NetworkingV1().IngressClasses().Create(ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "front", Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
		Spec:       networkingv1.IngressClassSpec{Controller: "example.com/ingress"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ingresses := s.Admin.NetworkingV1().Ingresses("classes")
	wait.UntilCtx(t, 30*time.Second, "an Ingress naming no class to get the default IngressClass", func(ctx context.Context) error {
		attempt++
		got, err := ingresses.Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", attempt)},
			Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if got.Spec.IngressClassName == nil || *got.Spec.IngressClassName != "front" {
			return fmt.Errorf("ingressClassName %v, want front", got.Spec.IngressClassName)
		}
		return nil
	})
}

// TestPodTopologyLabelsAndResizeAdmission: kube-apiserver's
// PodTopologyLabels plugin gives a pod its node's zone and region labels,
// whether it is bound through pods/binding or created on the node, and
// PodResizeValidator refuses a resize beyond the node's allocatable.
func TestPodTopologyLabelsAndResizeAdmission(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := context.Background()
	podNamespace(t, s.Admin, "zoned")
	zone := map[string]string{corev1.LabelTopologyZone: "z1", corev1.LabelTopologyRegion: "r1"}
	node, err := s.Admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "zoned-node",
		Labels: map[string]string{corev1.LabelTopologyZone: "z1", corev1.LabelTopologyRegion: "r1", "rack": "7"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the node lifecycle controller writes it too
		node, err := s.Admin.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("10")}
		node.Status.Allocatable = node.Status.Capacity
		_, err = s.Admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	pods := s.Admin.CoreV1().Pods("zoned")
	hasZone := func(pod *corev1.Pod) error {
		for k, v := range zone {
			if pod.Labels[k] != v {
				return fmt.Errorf("pod %s labels %v, want the node's %s=%s", pod.Name, pod.Labels, k, v)
			}
		}
		if _, ok := pod.Labels["rack"]; ok {
			return fmt.Errorf("pod %s got the node's label rack, which is no topology label", pod.Name)
		}
		return nil
	}

	attempt := 0
	wait.UntilCtx(t, 30*time.Second, "a pod created on the node to get its topology labels", func(ctx context.Context) error {
		attempt++
		onNode := testPod(fmt.Sprintf("on-node-%d", attempt))
		onNode.Spec.NodeName = node.Name
		got, err := pods.Create(ctx, onNode, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		return hasZone(got)
	})

	// The node has no agent and stays tainted not-ready: the pod tolerates
	// that, and is bound here unless the scheduler has bound it already.
	later := testPod("bound-later")
	later.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}}
	unbound, err := pods.Create(ctx, later, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: unbound.Name},
		Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsConflict(err) {
		t.Fatalf("bind: %v", err)
	}
	bound, err := pods.Get(ctx, unbound.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bound.Spec.NodeName != node.Name {
		t.Fatalf("pod %s bound to %q, want %s", bound.Name, bound.Spec.NodeName, node.Name)
	}
	if err := hasZone(bound); err != nil {
		t.Errorf("bound through pods/binding: %v", err)
	}

	sized := testPod("sized")
	sized.Spec.InitContainers = nil
	sized.Spec.Containers = sized.Spec.Containers[:1]
	sized.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	sized.Spec.NodeName = node.Name
	if sized, err = pods.Create(ctx, sized, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sized.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	if _, err := pods.UpdateResize(ctx, sized.Name, sized, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "node didn't have enough allocatable resources: cpu") {
		t.Errorf("resize beyond the node's allocatable: %v, want upstream's Forbidden", err)
	}
	sized.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("750m")
	if _, err := pods.UpdateResize(ctx, sized.Name, sized, metav1.UpdateOptions{}); err != nil {
		t.Errorf("resize within the node's allocatable: %v", err)
	}
}
