package openapi

import (
	"fmt"
	"reflect"
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	svmv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// newScheme knows the Go type of every kind the generated definitions cover
// (the same group list as generated/doc.go). It is built per Handler rather
// than shared, so no package holds mutable global state.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, discoveryv1.AddToScheme, eventsv1.AddToScheme, coordinationv1.AddToScheme, certificatesv1.AddToScheme,
		rbacv1.AddToScheme, authorizationv1.AddToScheme, authenticationv1.AddToScheme, policyv1.AddToScheme,
		appsv1.AddToScheme, batchv1.AddToScheme, autoscalingv1.AddToScheme, storagev1.AddToScheme, resourcev1.AddToScheme, nodev1.AddToScheme,
		networkingv1.AddToScheme, flowcontrolv1.AddToScheme, admissionregistrationv1.AddToScheme, schedulingv1.AddToScheme,
		svmv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the OpenAPI scheme: %w", err)
		}
	}
	return scheme, nil
}

// gvkExtension is the vendor extension through which kubectl (explain,
// validation, the field-validation probe) finds the schema of a kind.
const gvkExtension = "x-kubernetes-group-version-kind"

// definitionNamer names definitions by their OpenAPI model name (what the
// generator keyed them by) and tags each with the group-version-kinds it is
// served as, as kube-apiserver's namer does.
type definitionNamer struct {
	kinds map[string][]schema.GroupVersionKind // by model name
}

func newDefinitionNamer(scheme *runtime.Scheme) *definitionNamer {
	n := &definitionNamer{kinds: map[string][]schema.GroupVersionKind{}}
	for gvk, t := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		name := util.GetCanonicalTypeName(reflect.New(t).Interface())
		n.kinds[name] = append(n.kinds[name], gvk)
	}
	for _, gvks := range n.kinds {
		sort.Slice(gvks, func(i, j int) bool { return gvks[i].String() < gvks[j].String() })
	}
	return n
}

// name is common.Config.GetDefinitionName.
func (n *definitionNamer) name(model string) (string, spec.Extensions) {
	gvks, ok := n.kinds[model]
	if !ok {
		return model, nil
	}
	list := make([]any, 0, len(gvks))
	for _, gvk := range gvks {
		list = append(list, map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
	}
	return model, spec.Extensions{gvkExtension: list}
}
