package openapi

import (
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

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
