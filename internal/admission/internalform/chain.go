package internalform

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// form is one request's objects in their internal form. A Chain shares it
// between its wrapped plugins, so that a pod create converts once per
// admission phase instead of twice per upstream plugin (a pod passes
// through about ten of them).
type form struct {
	v1, v1Old runtime.Object // what obj and old were converted from
	obj, old  runtime.Object
	converted bool
	dirty     bool // obj has changes not yet converted back into v1
}

type formKey struct{}

// formFrom returns the chain's form from ctx, or a new one for this call
// alone (shared false).
func formFrom(ctx context.Context) (f *form, shared bool) {
	if f, ok := ctx.Value(formKey{}).(*form); ok {
		return f, true
	}
	return &form{}, false
}

// attributes are a's with its objects in their internal form, converted
// unless the form already holds a's objects.
func (f *form) attributes(a admission.Attributes) (*internalAttributes, error) {
	if !f.converted || f.v1 != a.GetObject() || f.v1Old != a.GetOldObject() {
		if err := f.flush(); err != nil {
			return nil, err
		}
		obj, err := toInternal(a.GetObject())
		if err != nil {
			return nil, err
		}
		old, err := toInternal(a.GetOldObject())
		if err != nil {
			return nil, err
		}
		*f = form{v1: a.GetObject(), v1Old: a.GetOldObject(), obj: obj, old: old, converted: true}
	}
	return &internalAttributes{Attributes: a, obj: f.obj, old: f.old}, nil
}

// flush converts the internal form's changes back into the request's object.
func (f *form) flush() error {
	if !f.dirty {
		return nil
	}
	f.dirty = false
	if err := legacyscheme.Scheme.Convert(f.obj, f.v1, nil); err != nil {
		return fmt.Errorf("converting %T back from its internal form: %w", f.v1, err)
	}
	return nil
}

// forget flushes, then drops the internal form: a plugin on the v1 object
// may have changed it since.
func (f *form) forget() error {
	err := f.flush()
	f.converted = false
	return err
}

// ReadOnlyAdmitter is a mutating plugin whose Admit only reads the
// request's object (a check that must answer before validation): a Chain
// shows it the internal form's changes but need not convert again after it.
type ReadOnlyAdmitter interface {
	AdmitReadsOnly()
}

// Chain is admission.NewChainHandler for plugins some of which are
// wrapped (Wrap, WrapKinds): they share one conversion per phase. Before a
// plugin on the v1 object admits, the internal form's changes are
// converted back; after it, the form is converted again when next needed,
// unless the plugin is a ReadOnlyAdmitter. Validating plugins change
// nothing, so one conversion serves them all.
func Chain(plugins ...admission.Interface) admission.Interface { return chain(plugins) }

type chain []admission.Interface

var (
	_ admission.MutationInterface   = chain(nil)
	_ admission.ValidationInterface = chain(nil)
)

// Handles implements admission.Interface: the chain handles an operation
// if any of its plugins does.
func (c chain) Handles(op admission.Operation) bool {
	for _, p := range c {
		if p.Handles(op) {
			return true
		}
	}
	return false
}

// Admit runs every mutating plugin that handles a's operation, in order.
func (c chain) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	f, shared := formFrom(ctx)
	if !shared {
		ctx = context.WithValue(ctx, formKey{}, f)
	}
	for _, p := range c {
		m, ok := p.(admission.MutationInterface)
		if !ok || !p.Handles(a.GetOperation()) {
			continue
		}
		_, sharesForm := p.(sharesForm)
		if !sharesForm {
			if err := f.flush(); err != nil {
				return err
			}
		}
		if err := m.Admit(ctx, a, o); err != nil {
			return err
		}
		if _, readOnly := p.(ReadOnlyAdmitter); !sharesForm && !readOnly {
			if err := f.forget(); err != nil {
				return err
			}
		}
	}
	if shared {
		return nil // the outer chain flushes
	}
	return f.flush()
}

// Validate runs every validating plugin that handles a's operation, in order.
func (c chain) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if _, shared := formFrom(ctx); !shared {
		ctx = context.WithValue(ctx, formKey{}, &form{})
	}
	for _, p := range c {
		if v, ok := p.(admission.ValidationInterface); ok && p.Handles(a.GetOperation()) {
			if err := v.Validate(ctx, a, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// sharesForm marks the plugins that keep to the shared form's rules: wrapped
// plugins and chains.
type sharesForm interface{ sharesForm() }

func (*wrapped) sharesForm() {}
func (chain) sharesForm()    {}
