package proxy

import (
	"fmt"
	"reflect"
	"unsafe"

	"k8s.io/kubernetes/pkg/proxy/nftables"
	"k8s.io/kubernetes/pkg/proxy/runner"
)

// syncRunner returns the proxier's bounded-frequency runner, whose Loop
// applies the rules. Upstream's SyncLoop runs it until the process exits
// (wait.NeverStop); the agent must stop it with the rest of itself, so it
// runs the same loop with a stop channel of its own. The field is checked
// by name and type, so a different upstream fails here, at start, not
// silently.
func syncRunner(p *nftables.Proxier) (*runner.BoundedFrequencyRunner, error) {
	field := reflect.ValueOf(p).Elem().FieldByName("syncRunner")
	want := reflect.TypeFor[*runner.BoundedFrequencyRunner]()
	if !field.IsValid() || field.Type() != want {
		return nil, fmt.Errorf("proxy: upstream nftables.Proxier has no syncRunner %s", want)
	}
	r := *(**runner.BoundedFrequencyRunner)(unsafe.Pointer(field.UnsafeAddr()))
	if r == nil {
		return nil, fmt.Errorf("proxy: upstream nftables.Proxier's syncRunner is nil")
	}
	return r, nil
}
