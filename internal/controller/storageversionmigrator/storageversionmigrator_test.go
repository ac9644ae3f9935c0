package storageversionmigrator

import (
	"testing"

	clientgofeatures "k8s.io/client-go/features"
)

// TestFeatureGatesTurnTheMigratorOn: at Kubernetes 1.37 the gates the
// migrator needs are on by default, and client-go's are answered by the
// component-base gate that k8s.io/kubernetes/pkg/features installs, so the
// server runs the migrator without setting any gate.
func TestFeatureGatesTurnTheMigratorOn(t *testing.T) {
	for _, gate := range []clientgofeatures.Feature{clientgofeatures.InformerResourceVersion, clientgofeatures.InOrderInformers} {
		if !clientgofeatures.FeatureGates().Enabled(gate) {
			t.Errorf("client-go gate %s is off", gate)
		}
	}
	if on, err := enabled(); !on || err != nil {
		t.Fatalf("enabled() = %v, %v; want the migrator on", on, err)
	}
}
