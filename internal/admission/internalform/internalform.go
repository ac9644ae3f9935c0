// Package internalform runs kube-apiserver's admission plugins
// (k8s.io/kubernetes/plugin/pkg/admission/...), which are written for the
// internal API types, on berth's requests, whose objects are v1 from the
// request to the store (docs/adr/0009). The plugin sees the object converted
// through the legacy scheme; what a mutating plugin changes is converted
// back into the request's object. Kinds the legacy scheme does not know
// reach the plugin as they are, and upstream's plugins ignore them.
package internalform

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	// The core group's internal types and conversions in the legacy scheme.
	_ "k8s.io/kubernetes/pkg/apis/core/install"
)

// Wrap returns plugin as an admission.Interface over v1 objects.
func Wrap(plugin admission.Interface) admission.Interface {
	return &wrapped{plugin: plugin}
}

// WrapKinds is Wrap for a plugin that acts on the given kinds only: other
// requests skip it, and are not converted for it.
func WrapKinds(plugin admission.Interface, kinds ...schema.GroupKind) admission.Interface {
	only := map[schema.GroupKind]bool{}
	for _, k := range kinds {
		only[k] = true
	}
	return &wrapped{plugin: plugin, only: only}
}

type wrapped struct {
	plugin admission.Interface
	// only, when set, are the kinds the plugin acts on.
	only map[schema.GroupKind]bool
}

func (w *wrapped) skips(a admission.Attributes) bool {
	return w.only != nil && !w.only[a.GetKind().GroupKind()]
}

var (
	_ admission.MutationInterface   = (*wrapped)(nil)
	_ admission.ValidationInterface = (*wrapped)(nil)
)

func (w *wrapped) Handles(op admission.Operation) bool { return w.plugin.Handles(op) }

// Admit runs a mutating plugin on the internal form. Its changes reach the
// request's object at once, or, in a Chain, when something else needs it.
func (w *wrapped) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	plugin, ok := w.plugin.(admission.MutationInterface)
	if !ok || w.skips(a) {
		return nil
	}
	f, shared := formFrom(ctx)
	internal, err := f.attributes(a)
	if err != nil {
		return err
	}
	if err := plugin.Admit(ctx, internal, o); err != nil {
		return err
	}
	if internal.obj != a.GetObject() {
		f.dirty = true
	}
	if shared {
		return nil
	}
	return f.flush()
}

// Validate runs a validating plugin on the internal form.
func (w *wrapped) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	plugin, ok := w.plugin.(admission.ValidationInterface)
	if !ok || w.skips(a) {
		return nil
	}
	f, _ := formFrom(ctx)
	internal, err := f.attributes(a)
	if err != nil {
		return err
	}
	return plugin.Validate(ctx, internal, o)
}

// internalAttributes are the request's attributes with its objects in
// their internal form; annotations and everything else go to the request's.
type internalAttributes struct {
	admission.Attributes
	obj, old runtime.Object
}

func (a *internalAttributes) GetObject() runtime.Object    { return a.obj }
func (a *internalAttributes) GetOldObject() runtime.Object { return a.old }

// toInternal converts obj to the internal version of its group, or returns
// obj itself when the legacy scheme has none (other groups, CRDs, options).
func toInternal(obj runtime.Object) (runtime.Object, error) {
	if obj == nil {
		return nil, nil
	}
	gvks, _, err := legacyscheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return obj, nil
	}
	internalKind := gvks[0].GroupKind().WithVersion(runtime.APIVersionInternal)
	if !legacyscheme.Scheme.Recognizes(internalKind) {
		return obj, nil
	}
	internal, err := legacyscheme.Scheme.New(internalKind)
	if err != nil {
		return nil, fmt.Errorf("new internal %s: %w", internalKind.Kind, err)
	}
	if err := legacyscheme.Scheme.Convert(obj, internal, nil); err != nil {
		return nil, fmt.Errorf("converting %s to its internal form: %w", internalKind.Kind, err)
	}
	return internal, nil
}
