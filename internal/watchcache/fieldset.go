package watchcache

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
)

// fieldSet is an entry's selectable fields as pairs sorted by name. It
// answers field selectors (fields.Fields) as a fields.Set would, in about
// half the memory: a map of a pod's ten fields costs ~600 bytes per cached
// pod, these pairs ~340, and the cache holds one set per object. Entries
// hold it by pointer, so passing it as fields.Fields allocates nothing.
type fieldSet struct{ pairs []fieldPair }

type fieldPair struct{ name, value string }

var _ fields.Fields = (*fieldSet)(nil)

func newFieldSet(set fields.Set) *fieldSet {
	pairs := make([]fieldPair, 0, len(set))
	for name, value := range set {
		pairs = append(pairs, fieldPair{name, value})
	}
	slices.SortFunc(pairs, func(a, b fieldPair) int { return strings.Compare(a.name, b.name) })
	return &fieldSet{pairs: pairs}
}

func (fs *fieldSet) find(name string) (int, bool) {
	return slices.BinarySearchFunc(fs.pairs, name, func(p fieldPair, name string) int { return strings.Compare(p.name, name) })
}

// Has implements fields.Fields.
func (fs *fieldSet) Has(name string) bool {
	_, ok := fs.find(name)
	return ok
}

// Get implements fields.Fields: the value, or "" when absent.
func (fs *fieldSet) Get(name string) string {
	if i, ok := fs.find(name); ok {
		return fs.pairs[i].value
	}
	return ""
}
