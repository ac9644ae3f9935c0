package server

import (
	"context"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// cacheOnlyPlugin records whether its informers had synced when it was asked.
type cacheOnlyPlugin struct {
	*admission.Handler
	synced                              atomic.Bool
	admittedUnsynced, validatedUnsynced bool
	calls                               int
}

func (p *cacheOnlyPlugin) Admit(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	p.calls++
	p.admittedUnsynced = !p.synced.Load()
	return nil
}

func (p *cacheOnlyPlugin) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	p.calls++
	p.validatedUnsynced = !p.synced.Load()
	return nil
}

// TestSyncedFirstWaitsForTheInformers: a plugin reading only its caches is
// asked only once they have listed; the informers sync while the request
// waits (on the third look at them).
func TestSyncedFirstWaitsForTheInformers(t *testing.T) {
	plugin := &cacheOnlyPlugin{Handler: admission.NewHandler(admission.Create)}
	var looks atomic.Int32
	plugin.SetReadyFunc(func() bool {
		if looks.Add(1) >= 3 {
			plugin.synced.Store(true)
		}
		return plugin.synced.Load()
	})
	wrapped := waitForSync(plugin)
	attrs := admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "ns", "p",
		schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "", admission.Create, nil, false, nil)
	if err := wrapped.(admission.MutationInterface).Admit(context.Background(), attrs, nil); err != nil {
		t.Fatalf("admit: %v", err)
	}
	if err := wrapped.(admission.ValidationInterface).Validate(context.Background(), attrs, nil); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if plugin.calls != 2 || plugin.admittedUnsynced || plugin.validatedUnsynced {
		t.Errorf("plugin asked %d times, admit before sync %v, validate before sync %v; want twice, both after sync",
			plugin.calls, plugin.admittedUnsynced, plugin.validatedUnsynced)
	}
	if !wrapped.Handles(admission.Create) || wrapped.Handles(admission.Delete) {
		t.Errorf("wrapped plugin handles other operations than the plugin")
	}
}
