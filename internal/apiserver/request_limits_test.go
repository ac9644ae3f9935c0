package apiserver

import (
	"errors"
	"testing"

	apistorage "k8s.io/apiserver/pkg/storage"
	flowcontrolrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// The work estimator learns berth's own resources' counts from their
// readers and the extension servers' (custom resources) from their last
// count; an aggregated server's resources stay unknown.
func TestObjectStatsForOwnAndCustomResources(t *testing.T) {
	counts := flowcontrolrequest.NewStorageObjectCountTracker()
	counts.Set("widgets.example.com", apistorage.Stats{ObjectCount: 7})
	api := &apiSet{
		objectCounts: map[string]func() (apistorage.Stats, error){
			"pods": func() (apistorage.Stats, error) { return apistorage.Stats{ObjectCount: 3}, nil },
		},
		extensionCounts: counts,
	}
	for resource, want := range map[string]int64{"pods": 3, "widgets.example.com": 7} {
		stats, err := api.objectStats(resource)
		if err != nil || stats.ObjectCount != want {
			t.Errorf("%s: %+v, %v; want %d objects", resource, stats, err, want)
		}
	}
	if _, err := api.objectStats("flunders.wardle.example.com"); !errors.Is(err, flowcontrolrequest.ObjectCountNotFoundErr) {
		t.Errorf("an aggregated server's resource: %v, want ObjectCountNotFoundErr", err)
	}
}
