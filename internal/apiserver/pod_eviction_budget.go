package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/retry"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	podstorage "k8s.io/kubernetes/pkg/registry/core/pod/storage"
)

// budgetVerdict is what the budget check decided for one eviction.
type budgetVerdict struct {
	budget string
	// status, when set, is the answer instead of a deletion (more than one budget).
	status *metav1.Status
	// unhealthyPodAllowed: the pod is not Ready and may go without spending
	// a disruption, provided it is still the pod that was read.
	unhealthyPodAllowed bool
}

// spendBudget is the budget half of upstream's EvictionREST.Create: find
// the pod's budgets, let an unhealthy pod go where the budget's policy
// allows it, and otherwise check and decrement the one budget, re-reading
// it on conflicts.
func (e *evictionREST) spendBudget(ctx context.Context, pod *corev1.Pod, dryRun bool) (budgetVerdict, error) {
	budgets, err := e.budgetsOf(ctx, pod)
	if err != nil || len(budgets) == 0 {
		return budgetVerdict{}, err
	}
	if len(budgets) > 1 {
		return budgetVerdict{status: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}}, nil
	}
	pdb := budgets[0]
	verdict := budgetVerdict{budget: pdb.Name}
	if !podutil.IsPodReady(pod) {
		if pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow {
			verdict.unhealthyPodAllowed = true
			return verdict, nil
		}
		// IfHealthyBudget (the default): an unready pod may go while the
		// application is not disrupted.
		if pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
			verdict.unhealthyPodAllowed = true
			return verdict, nil
		}
	}
	refresh := false
	err = retry.RetryOnConflict(podstorage.EvictionsRetry, func() error {
		if refresh {
			if pdb, err = e.getBudget(ctx, verdict.budget); err != nil {
				return err
			}
		}
		if err := e.checkAndDecrement(ctx, pod.Name, pdb, dryRun); err != nil {
			refresh = true
			return err
		}
		return nil
	})
	return verdict, err
}

// checkAndDecrement is upstream's EvictionREST.checkAndDecrement: refuse
// when the budget allows no disruption (429 with a DisruptionBudget cause),
// else record the pod as disrupted in one status update.
func (e *evictionREST) checkAndDecrement(ctx context.Context, podName string, pdb *policyv1.PodDisruptionBudget, dryRun bool) error {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return tooManyRequestsWhileProcessing(pdb.Name)
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return budgetForbids(pdb.Name, "pdb disruptions allowed is negative", "pdb disruptions allowed is negative")
	}
	if len(pdb.Status.DisruptedPods) > podstorage.MaxDisruptedPodSize {
		return budgetForbids(pdb.Name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
			"too many pending evictions not confirmed by PDB controller")
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type: policyv1.DisruptionBudgetCause, Message: noDisruptionMessage(pdb)})
		return err
	}
	pdb = pdb.DeepCopy()
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		pdbhelper.UpdateDisruptionAllowedCondition(pdb)
	}
	if dryRun {
		return nil
	}
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = make(map[string]metav1.Time)
	}
	// The disruption controller counts the pod as gone from here on, and
	// forgets it if it is not deleted within its timeout.
	pdb.Status.DisruptedPods[podName] = metav1.Time{Time: time.Now()}
	_, _, err := e.budgets.forStatus("status").Update(ctx, pdb.Name, rest.DefaultUpdatedObjectInfo(pdb),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	return err
}

// noDisruptionMessage is why a budget allowing no disruption refuses, as upstream words it.
func noDisruptionMessage(pdb *policyv1.PodDisruptionBudget) string {
	condition := meta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	switch {
	// A failed sync first: the healthy counts are not to be trusted then.
	case condition != nil && condition.Status == metav1.ConditionFalse && len(condition.Message) > 0 && condition.Reason == policyv1.SyncFailedReason:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, condition.Message)
	case pdb.Status.CurrentHealthy <= pdb.Status.DesiredHealthy:
		return fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
	case condition != nil && condition.Status == metav1.ConditionFalse && len(condition.Message) > 0:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", pdb.Name, condition.Reason, condition.Message)
	default:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
	}
}

func budgetForbids(name, reason, detail string) error {
	err := apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), name, errors.New(reason))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: %s", name, detail)})
	return err
}

// tooManyRequestsWhileProcessing is the 429 for a budget whose status the
// controller has not caught up with yet.
func tooManyRequestsWhileProcessing(name string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", name)})
	return err
}

// budgetsOf lists the budgets in the pod's namespace whose selector
// matches it (an invalid selector matches nothing).
func (e *evictionREST) budgetsOf(ctx context.Context, pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	if e.budgets == nil {
		return nil, nil
	}
	obj, err := e.budgets.List(ctx, &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	list, ok := obj.(*policyv1.PodDisruptionBudgetList)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("poddisruptionbudgets storage listed %T", obj))
	}
	var out []*policyv1.PodDisruptionBudget
	for i := range list.Items {
		pdb := &list.Items[i]
		if pdb.Namespace != pod.Namespace {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out, nil
}

func (e *evictionREST) getBudget(ctx context.Context, name string) (*policyv1.PodDisruptionBudget, error) {
	obj, err := e.budgets.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pdb, ok := obj.(*policyv1.PodDisruptionBudget)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("poddisruptionbudgets storage returned %T", obj))
	}
	return pdb, nil
}
