package server

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	psadmission "k8s.io/pod-security-admission/admission"

	"github.com/berth/berth/internal/admission/podsecurity"
	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/pki"
)

// newPodSecurity is the PodSecurity admission plugin, reading namespaces
// and pods through factory, which reads them through to the watch cache
// (newAdmissionPlugins). Until the namespace informer has listed, a
// namespace it lacks is read over client (as upstream's plugin does for
// one just created).
func newPodSecurity(cfg Config, factory informers.SharedInformerFactory, client kubernetes.Interface, reg prometheus.Registerer) (*podsecurity.Plugin, error) {
	conf, err := podsecurity.LoadConfiguration(cfg.AdmissionControlConfigFile)
	if err != nil {
		return nil, err
	}
	metrics, err := podsecurity.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	return podsecurity.New(podsecurity.Config{
		Configuration: conf,
		Namespaces:    psadmission.NamespaceGetterFromListerAndClient(factory.Core().V1().Namespaces().Lister(), client),
		Pods:          psadmission.PodListerFromInformer(factory.Core().V1().Pods().Lister()),
		Metrics:       metrics,
	})
}

// localOnceServed lists and watches a core/v1 resource from local as the
// API server's own identity. The plugin, and so its informers, exist before
// the API server that fills local; they only list once started, after it.
func localOnceServed(local *apiserver.LocalReads, resource string) cache.ListerWatcher {
	return localOnceServedGVR(local, corev1.SchemeGroupVersion.WithResource(resource))
}

// localOnceServedGVR is localOnceServed for a resource of any group.
func localOnceServedGVR(local *apiserver.LocalReads, gvr schema.GroupVersionResource) cache.ListerWatcher {
	resolve := func(ctx context.Context) (cache.ListerWatcherWithContext, error) {
		lw, err := local.ListWatch(ctx, authenticatedUser(pki.APIServerClientIdentity), gvr)
		if err != nil {
			return nil, err
		}
		return cache.ToListerWatcherWithContext(lw), nil
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			lw, err := resolve(ctx)
			if err != nil {
				return nil, err
			}
			return lw.ListWithContext(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			lw, err := resolve(ctx)
			if err != nil {
				return nil, err
			}
			return lw.WatchWithContext(ctx, opts)
		},
	}
}
