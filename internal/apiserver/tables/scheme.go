package tables

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	svmv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// newScheme maps the Go types of served kinds to their kinds, so rows and
// lists of typed objects (whose TypeMeta is usually empty) are named right.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, discoveryv1.AddToScheme, eventsv1.AddToScheme, coordinationv1.AddToScheme, certificatesv1.AddToScheme,
		rbacv1.AddToScheme, authorizationv1.AddToScheme, policyv1.AddToScheme,
		appsv1.AddToScheme, batchv1.AddToScheme, autoscalingv1.AddToScheme, storagev1.AddToScheme, resourcev1.AddToScheme, nodev1.AddToScheme,
		schedulingv1.AddToScheme, svmv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the table scheme: %w", err)
		}
	}
	return scheme, nil
}
