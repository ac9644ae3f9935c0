package apiserver

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds"

	"github.com/berth/berth/internal/admission/internalform"
)

// withBuiltinAdmission chains after the configured plugins those of
// kube-apiserver's default-on plugins that belong to the kinds' semantics
// rather than to a deployment's policy, so every berth API runs them:
// DefaultTolerationSeconds (not-ready and unreachable tolerated for 300 s).
// Mutating plugins run before any validating one, so the position in the
// chain matches kube-apiserver's order.
func withBuiltinAdmission(configured admission.Interface) (admission.Interface, error) {
	tolerations := defaulttolerationseconds.NewDefaultTolerationSeconds()
	tolerations.InspectFeatureGates(utilfeature.DefaultFeatureGate)
	if err := tolerations.ValidateInitialization(); err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", defaulttolerationseconds.PluginName, err)
	}
	// It acts on pods only: other writes skip the conversion it would need.
	return internalform.Chain(configured, internalform.WrapKinds(tolerations, corev1.SchemeGroupVersion.WithKind("Pod").GroupKind())), nil
}
