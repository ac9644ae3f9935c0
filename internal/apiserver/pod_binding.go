package apiserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/features"

	"github.com/berth/berth/internal/store"
)

// bindingREST serves POST pods/NAME/binding: a precondition-checked write,
// as kube-apiserver's BindingREST, done as one store transaction that also
// checks the node's constraints against its usage record and guards the Node
// itself (pod_accounting.go), so a node's set of pods never breaks them.
type bindingREST struct {
	pods       *objectStore
	accounting *podAccounting
}

var _ rest.NamedCreater = (*bindingREST)(nil)

func (b *bindingREST) New() runtime.Object { return &corev1.Binding{} }
func (b *bindingREST) Destroy()            {}

// Create binds the pod named in the URL to binding.Target.
func (b *bindingREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	binding, ok := obj.(*corev1.Binding)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Binding: %T", obj))
	}
	if binding.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the binding (%s) does not match the pod name in the URL (%s)", binding.Name, name))
	}
	if binding.Target.Kind != "" && binding.Target.Kind != "Node" {
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), name, nil)
	}
	if binding.Target.Name == "" {
		return nil, apierrors.NewBadRequest("binding.target.name is required")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	if isDryRun(options.DryRun) {
		return bindingSucceeded(), nil
	}
	for attempt := 0; attempt < maxConflictRetries; attempt++ {
		// In the node's turn, the usage record this server last wrote is
		// current: binds to one node do not conflict with each other.
		err := b.accounting.inNodeTurn(ctx, binding.Target.Name, func() error {
			return b.tryBind(ctx, binding, attempt > 0)
		})
		if !errors.Is(err, errRetryUpdate) {
			if err != nil {
				return nil, b.pods.storeError(err, name)
			}
			return bindingSucceeded(), nil
		}
	}
	return nil, b.pods.storeError(store.ErrConflict, name)
}

func bindingSucceeded() *metav1.Status {
	return &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated}
}

// tryBind makes one attempt. The first reads the pod and its node from the
// watch cache (the scheduler binds pods it has just seen there), a retry
// from the store: the transaction's guards on both revisions turn a stale
// copy into a conflict, and so does a check that failed on one.
func (b *bindingREST) tryBind(ctx context.Context, binding *corev1.Binding, retry bool) error {
	// The pod to bind is shared when cached: not to be modified.
	pod, podRev, err := cachedOrStored[*corev1.Pod](ctx, b.pods, binding.Name, retry)
	if err != nil {
		return err
	}
	if err := checkBindable(pod, binding); err != nil {
		if !retry {
			return errRetryUpdate
		}
		return err
	}
	ops, err := b.bindOps(ctx, pod, podRev, binding, retry)
	if err != nil {
		return err
	}
	if _, err := b.pods.store.Txn(ctx, ops); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return errRetryUpdate
		}
		return b.pods.storeError(err, binding.Name)
	}
	return nil
}

// checkBindable is BindingREST's precondition: a pod is bound once, never
// while it is being deleted, and never while scheduling gates hold it.
func checkBindable(pod *corev1.Pod, binding *corev1.Binding) error {
	gr := corev1.Resource("pods")
	switch {
	case binding.UID != "" && binding.UID != pod.UID:
		return apierrors.NewConflict(gr, pod.Name, fmt.Errorf("the UID in the binding (%s) does not match the pod's (%s)", binding.UID, pod.UID))
	case binding.ResourceVersion != "" && binding.ResourceVersion != pod.ResourceVersion:
		return apierrors.NewConflict(gr, pod.Name, fmt.Errorf("the resourceVersion in the binding (%s) does not match the pod's (%s)", binding.ResourceVersion, pod.ResourceVersion))
	case pod.DeletionTimestamp != nil:
		return apierrors.NewConflict(gr, pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
	case pod.Spec.NodeName != "":
		return apierrors.NewConflict(gr, pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName))
	case len(pod.Spec.SchedulingGates) > 0:
		return apierrors.NewConflict(gr, pod.Name, fmt.Errorf("pod %s has non-empty .spec.schedulingGates", pod.Name))
	}
	return nil
}

// podAsBound is pod as BindingREST binds it: on the binding's node, with the
// binding's annotations (scrubbed as the pod strategy would) and, as
// PodTopologyLabels admission put them there, its labels; the scheduler's
// nomination cleared.
func podAsBound(pod *corev1.Pod, binding *corev1.Binding) *corev1.Pod {
	bound := pod.DeepCopy()
	bound.Spec.NodeName = binding.Target.Name
	if utilfeature.DefaultFeatureGate.Enabled(features.ClearingNominatedNodeNameAfterBinding) {
		bound.Status.NominatedNodeName = ""
	}
	bound.Annotations = mergedInto(bound.Annotations, binding.Annotations)
	podutil.DropInitContainerAnnotations(bound.Annotations)
	if utilfeature.DefaultFeatureGate.Enabled(features.PodTopologyLabelsAdmission) {
		bound.Labels = mergedInto(bound.Labels, binding.Labels)
	}
	return bound
}

// mergedInto is dst with src's entries set in it, overwriting.
func mergedInto(dst, src map[string]string) map[string]string {
	if len(src) > 0 && dst == nil {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
}

// bindOps returns the guarded writes that bind pod (read at podRev) to the
// binding's node: the pod itself, plus the node's constraint check and usage
// update (podAccounting.bindOps), all in one transaction.
func (b *bindingREST) bindOps(ctx context.Context, pod *corev1.Pod, podRev int64, binding *corev1.Binding, nodeFromStore bool) ([]store.Op, error) {
	bound := podAsBound(pod, binding)
	setPodCondition(&bound.Status, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
	})
	data, err := b.pods.encode(bound)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	ops, err := b.accounting.bindOps(ctx, bound, nodeFromStore, scheduledFits)
	if err != nil {
		return nil, err
	}
	return append(ops, store.Op{Key: b.pods.res.key(pod.Namespace, pod.Name), ExpectModRevision: podRev, Value: data}), nil
}

func setPodCondition(status *corev1.PodStatus, cond corev1.PodCondition) {
	for i := range status.Conditions {
		if status.Conditions[i].Type == cond.Type {
			status.Conditions[i] = cond
			return
		}
	}
	status.Conditions = append(status.Conditions, cond)
}

// bindingCollection serves POST namespaces/NS/bindings, the older form of
// pods/NAME/binding that names the pod in the body.
type bindingCollection struct{ *bindingREST }

var _ rest.Creater = bindingCollection{}

func (b bindingCollection) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	binding, ok := obj.(*corev1.Binding)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Binding: %T", obj))
	}
	return b.bindingREST.Create(ctx, binding.Name, obj, createValidation, options)
}
