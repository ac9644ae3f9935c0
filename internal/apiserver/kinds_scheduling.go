package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	// The scheduling group's internal types, defaults and conversions in
	// the legacy scheme, which its registry strategy and the Priority
	// admission plugin use.
	schedulingapi "k8s.io/kubernetes/pkg/apis/scheduling"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	schedulingapiv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"
	"k8s.io/kubernetes/pkg/registry/scheduling/priorityclass"
)

// schedulingResources is scheduling.k8s.io/v1: PriorityClasses, defaulted
// and validated by upstream's registry strategy. The Priority admission
// plugin resolves a pod's class into its priority and preemption policy;
// the system classes exist from the first start and cannot be deleted.
func schedulingResources() []*resource {
	return []*resource{
		{
			gvr: schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), kind: "PriorityClass", singular: "priorityclass",
			shortNames: []string{"pc"},
			newObj:     newOf[schedulingv1.PriorityClass](), newList: newOf[schedulingv1.PriorityClassList](),
			registry:  &registryKind{strategy: priorityclass.Strategy, newInternal: func() runtime.Object { return &schedulingapi.PriorityClass{} }},
			newMain:   func(r *resourceREST) fullREST { return &priorityClassREST{resourceREST: r} },
			bootstrap: systemPriorityClasses,
		},
	}
}

// priorityClassREST is upstream's priorityclass storage: deleting a system
// class is refused. As upstream, a collection delete does not pass through
// this check (its store deletes each object directly).
type priorityClassREST struct {
	*resourceREST
}

func (r *priorityClassREST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if slices.Contains(schedulingapiv1.SystemPriorityClassNames(), name) {
		return nil, false, apierrors.NewForbidden(schedulingapi.Resource("priorityclasses"), name,
			errors.New("this is a system priority class and cannot be deleted"))
	}
	return r.resourceREST.Delete(ctx, name, deleteValidation, options)
}

// systemPriorityClasses are kube-apiserver's system-node-critical and
// system-cluster-critical classes, which its scheduling post-start hook
// creates.
func systemPriorityClasses() []runtime.Object {
	var out []runtime.Object
	for _, pc := range schedulingapiv1.SystemPriorityClasses() {
		out = append(out, pc)
	}
	return out
}

// createBootstrapObjects creates each object a kind has from the first
// start (resource.bootstrap) that does not exist yet; existing ones are left
// as they are, as kube-apiserver's post-start hooks do.
func createBootstrapObjects(ctx context.Context, r *resourceREST) error {
	ctx = withObjectNamespace(ctx, "")
	for _, obj := range r.res.bootstrap() {
		accessor, err := meta.Accessor(obj)
		if err != nil {
			return fmt.Errorf("bootstrap %s: %w", r.res.gvr.GroupResource(), err)
		}
		if _, err := r.Create(ctx, obj, nil, &metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", r.res.gvr.GroupResource(), accessor.GetName(), err)
		}
	}
	return nil
}
