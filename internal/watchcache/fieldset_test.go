package watchcache

import (
	"testing"

	"k8s.io/apimachinery/pkg/fields"
)

// A fieldSet answers every selector as the fields.Set it was built from.
func TestFieldSetMatchesAsTheMapWould(t *testing.T) {
	t.Parallel()
	set := fields.Set{"metadata.name": "p", "metadata.namespace": "ns", "spec.nodeName": "", "status.phase": "Running", "spec.hostNetwork": "false"}
	fs := newFieldSet(set)
	for _, name := range []string{"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase", "spec.hostNetwork", "absent", "", "zzz"} {
		if fs.Has(name) != set.Has(name) || fs.Get(name) != set.Get(name) {
			t.Errorf("%q: fieldSet has %v %q, map has %v %q", name, fs.Has(name), fs.Get(name), set.Has(name), set.Get(name))
		}
	}
	for _, sel := range []string{"spec.nodeName=", "spec.nodeName!=", "status.phase=Running", "status.phase!=Running",
		"metadata.name=p,metadata.namespace=ns", "metadata.name=q", "absent=", "absent!=x", "spec.hostNetwork=false"} {
		s, err := fields.ParseSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.Matches(fs), s.Matches(set); got != want {
			t.Errorf("%s: fieldSet matches %v, map %v", sel, got, want)
		}
	}
}
