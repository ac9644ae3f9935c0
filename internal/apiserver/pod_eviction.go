package apiserver

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/util/dryrun"
	"k8s.io/client-go/util/retry"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	podstorage "k8s.io/kubernetes/pkg/registry/core/pod/storage"
	"k8s.io/utils/ptr"
)

// evictionREST serves POST pods/NAME/eviction as kube-apiserver's
// EvictionREST (k8s.io/kubernetes/pkg/registry/core/pod/storage/eviction.go)
// does, step for step: a terminal, pending or terminating pod is deleted
// outright; otherwise the one PodDisruptionBudget covering the pod must
// allow a disruption, which is spent (status.disruptionsAllowed - 1, the pod
// in status.disruptedPods) before the pod, marked DisruptionTarget, is
// deleted. Upstream's type cannot be called: it is built on the generic
// registry Store of internal Pods and a PDB client, where berth's pods and
// budgets are v1 objects in berth's own REST storage.
type evictionREST struct {
	pods    *resourceREST
	budgets *resourceREST
}

var _ rest.NamedCreater = (*evictionREST)(nil)

func (e *evictionREST) New() runtime.Object { return &policyv1.Eviction{} }
func (e *evictionREST) Destroy()            {}

var evictionKind = policyv1.SchemeGroupVersion.WithKind("Eviction")

// Create evicts the pod: upstream's EvictionREST.Create.
func (e *evictionREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	eviction, ok := obj.(*policyv1.Eviction)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Eviction object: %T", obj))
	}
	if eviction.Name != name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	if eviction.DeleteOptions != nil && ptr.Deref(eviction.DeleteOptions.IgnoreStoreReadErrorWithClusterBreakingPotential, false) {
		return nil, apierrors.NewInvalid(evictionKind.GroupKind(), name, field.ErrorList{field.Invalid(
			field.NewPath("deleteOptions").Child("ignoreStoreReadErrorWithClusterBreakingPotential"), true,
			"can not be set for pod eviction, try after removing the option")})
	}
	deleteOptions, err := propagateDryRun(eviction, options)
	if err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, eviction.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	pod, deleted, err := e.deleteIfBudgetIgnored(ctx, name, deleteOptions)
	if err != nil {
		return nil, err
	}
	if deleted {
		return &metav1.Status{Status: metav1.StatusSuccess}, nil
	}
	return e.evictGuarded(ctx, pod, deleteOptions)
}

// deleteIfBudgetIgnored deletes a pod no budget guards (terminal, pending
// or terminating), retrying conflicts unless the caller set a
// resourceVersion precondition; otherwise it returns the pod to check.
func (e *evictionREST) deleteIfBudgetIgnored(ctx context.Context, name string, options *metav1.DeleteOptions) (*corev1.Pod, bool, error) {
	shouldRetry := apierrors.IsConflict
	if !resourceVersionIsUnset(options) {
		shouldRetry = func(error) bool { return false }
	}
	var pod *corev1.Pod
	deleted := false
	err := retry.OnError(podstorage.EvictionsRetry, shouldRetry, func() error {
		var err error
		if pod, err = e.getPod(ctx, name); err != nil {
			return err
		}
		if !canIgnoreBudget(pod) {
			return nil
		}
		opts := options
		// A running pod that could turn Ready must not be deleted on an
		// older reading than the one just taken.
		if shouldEnforceResourceVersion(pod) && resourceVersionIsUnset(options) {
			opts = withResourceVersionPrecondition(options, pod.ResourceVersion)
		}
		if err := e.markAndDelete(ctx, name, opts); err != nil {
			return err
		}
		deleted = true
		return nil
	})
	return pod, deleted, err
}

// evictGuarded spends the covering budget's disruption, if any, and
// deletes the pod.
func (e *evictionREST) evictGuarded(ctx context.Context, pod *corev1.Pod, options *metav1.DeleteOptions) (runtime.Object, error) {
	verdict, err := e.spendBudget(ctx, pod, dryrun.IsDryRun(options.DryRun))
	if wait.Interrupted(err) {
		err = apierrors.NewTimeoutError(fmt.Sprintf("couldn't update PodDisruptionBudget %q due to conflicts", verdict.budget), 10)
	}
	if err != nil {
		return nil, err
	}
	if verdict.status != nil {
		return verdict.status, nil
	}
	opts := options
	if verdict.unhealthyPodAllowed {
		// The pod must not have turned Ready since the budget was read.
		opts = withResourceVersionPrecondition(options, pod.ResourceVersion)
	}
	if err := e.markAndDelete(ctx, pod.Name, opts); err != nil {
		if apierrors.IsConflict(err) && verdict.unhealthyPodAllowed && resourceVersionIsUnset(options) {
			return nil, tooManyRequestsWhileProcessing(verdict.budget)
		}
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess}, nil
}

// markAndDelete adds the DisruptionTarget condition (unless dry-run) and
// deletes the pod: upstream's addConditionAndDeletePod.
func (e *evictionREST) markAndDelete(ctx context.Context, name string, options *metav1.DeleteOptions) error {
	if !dryrun.IsDryRun(options.DryRun) {
		updated, _, err := e.pods.forStatus("status").Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
			return withDisruptionTarget(old.(*corev1.Pod), options.Preconditions)
		}), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		if !resourceVersionIsUnset(options) {
			// The condition moved the pod on: the precondition follows it.
			options = withResourceVersionPrecondition(options, updated.(*corev1.Pod).ResourceVersion)
		}
	}
	_, _, err := e.pods.Delete(ctx, name, nil, options)
	return err
}

// withDisruptionTarget is the latest pod with DisruptionTarget set, or a
// conflict if it no longer meets the delete's preconditions.
func withDisruptionTarget(latest *corev1.Pod, preconditions *metav1.Preconditions) (runtime.Object, error) {
	pod := latest.DeepCopy()
	if preconditions != nil {
		if uid := preconditions.UID; uid != nil && len(*uid) > 0 && *uid != pod.UID {
			return nil, apierrors.NewConflict(corev1.Resource("Pod"), pod.Name,
				fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *uid, pod.UID))
		}
		if rv := preconditions.ResourceVersion; rv != nil && len(*rv) > 0 && *rv != pod.ResourceVersion {
			return nil, apierrors.NewConflict(corev1.Resource("Pod"), pod.Name,
				fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *rv, pod.ResourceVersion))
		}
	}
	podutil.UpdatePodCondition(&pod.Status, &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"})
	return pod, nil
}

func (e *evictionREST) getPod(ctx context.Context, name string) (*corev1.Pod, error) {
	obj, err := e.pods.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("pods storage returned %T", obj))
	}
	return pod, nil
}

// propagateDryRun merges the request's dry-run into the eviction's delete
// options; they must not disagree (a 500, as upstream's plain error is).
func propagateDryRun(eviction *policyv1.Eviction, options *metav1.CreateOptions) (*metav1.DeleteOptions, error) {
	if eviction.DeleteOptions == nil {
		return &metav1.DeleteOptions{DryRun: options.DryRun}, nil
	}
	if len(eviction.DeleteOptions.DryRun) == 0 {
		eviction.DeleteOptions.DryRun = options.DryRun
		return eviction.DeleteOptions, nil
	}
	if len(options.DryRun) == 0 {
		return eviction.DeleteOptions, nil
	}
	if !reflect.DeepEqual(options.DryRun, eviction.DeleteOptions.DryRun) {
		message := fmt.Sprintf("Non-matching dry-run options in request and content: %v and %v", options.DryRun, eviction.DeleteOptions.DryRun)
		return nil, apierrors.NewInternalError(errors.New(message))
	}
	return eviction.DeleteOptions, nil
}

// canIgnoreBudget: a terminal, pending or terminating pod disrupts nothing more.
func canIgnoreBudget(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed ||
		pod.Status.Phase == corev1.PodPending || !pod.DeletionTimestamp.IsZero()
}

func shouldEnforceResourceVersion(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.DeletionTimestamp.IsZero()
}

func resourceVersionIsUnset(options *metav1.DeleteOptions) bool {
	return options.Preconditions == nil || options.Preconditions.ResourceVersion == nil
}

func withResourceVersionPrecondition(options *metav1.DeleteOptions, resourceVersion string) *metav1.DeleteOptions {
	out := options.DeepCopy()
	if out.Preconditions == nil {
		out.Preconditions = &metav1.Preconditions{}
	}
	out.Preconditions.ResourceVersion = &resourceVersion
	return out
}
