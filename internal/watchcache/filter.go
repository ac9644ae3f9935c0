package watchcache

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// filter is what a List or a watcher selects.
type filter struct {
	namespace string
	label     labels.Selector
	field     fields.Selector
}

func newFilter(namespace string, label labels.Selector, field fields.Selector) filter {
	f := filter{namespace: namespace, label: label, field: field}
	if f.label != nil && f.label.Empty() {
		f.label = nil
	}
	if f.field != nil && f.field.Empty() {
		f.field = nil
	}
	return f
}

func (f filter) matches(e *entry) bool {
	if e == nil {
		return false
	}
	if f.namespace != "" && e.ns != f.namespace {
		return false
	}
	if f.label != nil && !f.label.Matches(e.labels) {
		return false
	}
	return f.field == nil || f.field.Matches(e.fields)
}
