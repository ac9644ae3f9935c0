package tables

import (
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// printer is the columns of one kind and how to fill a row from an object.
type printer struct {
	columns []metav1.TableColumnDefinition
	row     func(obj runtime.Object, now time.Time) (metav1.TableRow, error)
}

// typed adapts a printer of one Go type, so each kind's code reads its own
// fields without type assertions.
func typed[T runtime.Object](columns []metav1.TableColumnDefinition, row func(T, time.Time) metav1.TableRow) printer {
	return printer{columns: columns, row: func(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
		t, err := as[T](obj)
		if err != nil {
			return metav1.TableRow{}, err
		}
		return row(t, now), nil
	}}
}

// as returns obj as a T, converting an unstructured object of T's kind
// (as a dynamic client would send) into the typed form.
func as[T runtime.Object](obj runtime.Object) (T, error) {
	if t, ok := obj.(T); ok {
		return t, nil
	}
	var t T
	u, ok := obj.(runtime.Unstructured)
	if !ok {
		return t, fmt.Errorf("a %T printer cannot print a %T", t, obj)
	}
	t = reflect.New(reflect.TypeOf(t).Elem()).Interface().(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), t); err != nil {
		return t, apierrors.NewBadRequest(fmt.Sprintf("reading a %s to print it: %v", obj.GetObjectKind().GroupVersionKind().Kind, err))
	}
	return t, nil
}

// cells is a row of plain cells.
func cells(values ...any) metav1.TableRow { return metav1.TableRow{Cells: values} }

var objectMetaDocs = metav1.ObjectMeta{}.SwaggerDoc()

func nameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: objectMetaDocs["name"]}
}

func ageColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: objectMetaDocs["creationTimestamp"]}
}

func column(name, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "string", Description: description}
}

func wideColumn(name, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "string", Priority: 1, Description: description}
}

// since renders how long ago t was, as kubectl's AGE column does.
func since(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func sinceMicro(t metav1.MicroTime, now time.Time) string {
	return since(metav1.Time(t), now)
}

// orNone renders an empty value as kubectl does.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// defaultPrinter serves every kind without a printer of its own, typed or
// unstructured: its name and age.
var defaultPrinter = printer{
	columns: []metav1.TableColumnDefinition{nameColumn(), ageColumn()},
	row: func(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return metav1.TableRow{}, notAcceptable(fmt.Sprintf("a %T has no object metadata to print", obj))
		}
		return cells(m.GetName(), since(m.GetCreationTimestamp(), now)), nil
	},
}

// printers are the kinds berth serves that kubectl prints with more than
// NAME and AGE, keyed by group and kind.
func printers() map[schema.GroupKind]printer {
	all := map[schema.GroupKind]printer{
		{Kind: "Pod"}:                                 podPrinter(),
		{Kind: "Node"}:                                nodePrinter(),
		{Kind: "Namespace"}:                           namespacePrinter(),
		{Kind: "Event"}:                               eventPrinter(),
		{Kind: "ConfigMap"}:                           configMapPrinter(),
		{Kind: "Secret"}:                              secretPrinter(),
		{Kind: "ServiceAccount"}:                      serviceAccountPrinter(),
		{Group: "events.k8s.io", Kind: "Event"}:       eventsV1Printer(),
		{Group: "coordination.k8s.io", Kind: "Lease"}: leasePrinter(),
		{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}: csrPrinter(),
	}
	for gk, p := range upstreamPrinters() {
		all[gk] = p
	}
	for kind, p := range rbacPrinters() {
		all[schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: kind}] = p
	}
	return all
}
