// Package tables renders API objects as meta.k8s.io/v1 Tables, the form
// kubectl asks for (Accept: application/json;as=Table;v=v1;g=meta.k8s.io)
// so that `kubectl get` prints the columns kube-apiserver would print.
package tables

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Converter turns objects into Tables. It is immutable and safe for
// concurrent use.
type Converter struct {
	// scheme maps the Go types of served kinds to their kinds, so rows and
	// lists of typed objects (whose TypeMeta is usually empty) are named
	// right. It is client-go's, which knows every k8s.io/api kind, and is
	// only read: a scheme of the package's own, built with the same
	// AddToScheme, held a second copy of it (0.4 MiB).
	scheme   *runtime.Scheme
	printers map[schema.GroupKind]printer
	now      func() time.Time
}

// New returns a Converter that computes ages against now (time.Now in
// production; tests pass a fixed clock).
func New(now func() time.Time) (*Converter, error) {
	return &Converter{scheme: clientgoscheme.Scheme, printers: printers(), now: now}, nil
}

var defaultConverter = sync.OnceValues(func() (*Converter, error) { return New(time.Now) })

// Convert renders obj, one object or a list, with the wall clock. See
// Converter.Convert.
func Convert(obj runtime.Object, includeObject metav1.IncludeObjectPolicy) (*metav1.Table, error) {
	c, err := defaultConverter()
	if err != nil {
		return nil, err
	}
	return c.Convert(obj, includeObject)
}

// Convert renders obj, one object or a list, as a Table with kubectl's
// columns for its kind (NAME and AGE for kinds without their own printer).
// Every column is filled, wide ones (Priority 1) included: kubectl picks
// what to show. Each row carries the object as includeObject asks: nothing
// (None), its PartialObjectMetadata (Metadata, the default) or a copy of the
// whole object (Object), with apiVersion and kind set. The caller's objects
// are never modified. An unknown includeObject is a 400 BadRequest error, an
// object without metadata a 406 NotAcceptable.
func (c *Converter) Convert(obj runtime.Object, includeObject metav1.IncludeObjectPolicy) (*metav1.Table, error) {
	switch includeObject {
	case "", metav1.IncludeMetadata, metav1.IncludeNone, metav1.IncludeObject:
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("includeObject must be one of None, Metadata or Object, not %q", includeObject))
	}
	return c.table(obj, func(item runtime.Object, kind schema.GroupVersionKind) (runtime.RawExtension, error) {
		return c.rowObject(item, kind, includeObject)
	})
}

// ConvertToTable implements k8s.io/apiserver's rest.TableConvertor, for a
// REST core built on its handlers. Rows carry the objects themselves: the
// handlers reduce them to what the request's includeObject asks. With
// NoHeaders (every watch event after the first) the column definitions are
// left out.
func (c *Converter) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table, err := c.table(obj, func(item runtime.Object, _ schema.GroupVersionKind) (runtime.RawExtension, error) {
		return runtime.RawExtension{Object: item}, nil
	})
	if err != nil {
		return nil, err
	}
	if opts, ok := tableOptions.(*metav1.TableOptions); ok && opts.NoHeaders {
		table.ColumnDefinitions = nil
	}
	return table, nil
}

// table builds the Table of obj, asking rowObject what each row carries.
func (c *Converter) table(obj runtime.Object, rowObject func(runtime.Object, schema.GroupVersionKind) (runtime.RawExtension, error)) (*metav1.Table, error) {
	items := []runtime.Object{obj}
	table := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: metav1.SchemeGroupVersion.String()}}
	kind, err := c.kindOf(obj)
	if err != nil {
		return nil, err
	}
	if meta.IsListType(obj) {
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, fmt.Errorf("reading the items of a %s: %w", kind.Kind, err)
		}
		list, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, fmt.Errorf("reading the list metadata of a %s: %w", kind.Kind, err)
		}
		table.ResourceVersion = list.GetResourceVersion()
		table.Continue = list.GetContinue()
		table.RemainingItemCount = list.GetRemainingItemCount()
		kind.Kind = strings.TrimSuffix(kind.Kind, "List")
	} else if m, err := meta.Accessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	p, ok := c.printers[kind.GroupKind()]
	if !ok {
		p = defaultPrinter
	}
	table.ColumnDefinitions = p.columns
	now := c.now()
	table.Rows = make([]metav1.TableRow, 0, len(items))
	for _, item := range items {
		row, err := p.row(item, now)
		if err != nil {
			return nil, err
		}
		if row.Object, err = rowObject(item, kind); err != nil {
			return nil, err
		}
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}

// kindOf is the object's kind: from the scheme for typed objects (whose
// TypeMeta is often empty), from TypeMeta otherwise.
func (c *Converter) kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	if gvks, _, err := c.scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		return gvks[0], nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		return gvk, notAcceptable(fmt.Sprintf("cannot tell the kind of a %T to print it as a Table", obj))
	}
	return gvk, nil
}

// rowObject is what a row carries of its object.
func (c *Converter) rowObject(item runtime.Object, kind schema.GroupVersionKind, policy metav1.IncludeObjectPolicy) (runtime.RawExtension, error) {
	switch policy {
	case metav1.IncludeNone:
		return runtime.RawExtension{}, nil
	case metav1.IncludeObject:
		out := item.DeepCopyObject()
		if k, err := c.kindOf(out); err == nil {
			kind = k
		}
		out.GetObjectKind().SetGroupVersionKind(kind)
		return runtime.RawExtension{Object: out}, nil
	default:
		m, err := meta.Accessor(item)
		if err != nil {
			return runtime.RawExtension{}, notAcceptable(fmt.Sprintf("a %s has no object metadata to print", kind.Kind))
		}
		partial := &metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: metav1.SchemeGroupVersion.String()},
		}
		partial.ObjectMeta = *metaOf(m).DeepCopy()
		return runtime.RawExtension{Object: partial}, nil
	}
}

// metaOf copies an accessor's fields into an ObjectMeta, which typed and
// unstructured objects alike can provide.
func metaOf(m metav1.Object) *metav1.ObjectMeta {
	if om, ok := m.(*metav1.ObjectMeta); ok {
		return om
	}
	return &metav1.ObjectMeta{
		Name: m.GetName(), GenerateName: m.GetGenerateName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
		ResourceVersion: m.GetResourceVersion(), Generation: m.GetGeneration(),
		CreationTimestamp: m.GetCreationTimestamp(), DeletionTimestamp: m.GetDeletionTimestamp(),
		DeletionGracePeriodSeconds: m.GetDeletionGracePeriodSeconds(), Labels: m.GetLabels(),
		Annotations: m.GetAnnotations(), OwnerReferences: m.GetOwnerReferences(), Finalizers: m.GetFinalizers(),
		ManagedFields: m.GetManagedFields(),
	}
}

// notAcceptable is the 406 kube-apiserver answers when an object cannot be
// shown as a Table.
func notAcceptable(message string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: message,
	}}
}
