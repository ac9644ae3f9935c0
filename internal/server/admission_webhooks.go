package server

import (
	"fmt"
	"net/url"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"
)

// admissionWebhooks are kube-apiserver's MutatingAdmissionWebhook and
// ValidatingAdmissionWebhook plugins (upstream's own): they call the
// webhooks the cluster's webhook configurations name, skipping the
// resources kube-apiserver never sends to webhooks.
type admissionWebhooks struct {
	mutating, validating admission.Interface
}

// newAdmissionWebhooks builds both plugins over factory's informers (the
// webhook configurations and namespaces) and client.
func newAdmissionWebhooks(client kubernetes.Interface, factory informers.SharedInformerFactory) (*admissionWebhooks, error) {
	resolver := clusterIPResolver{services: factory.Core().V1().Services().Lister()}
	m, err := mutating.NewMutatingWebhook(nil)
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", mutating.PluginName, err)
	}
	if err := initWebhook(m.Webhook, client, factory, resolver); err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", mutating.PluginName, err)
	}
	v, err := validating.NewValidatingAdmissionWebhook(nil)
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", validating.PluginName, err)
	}
	if err := initWebhook(v.Webhook, client, factory, resolver); err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", validating.PluginName, err)
	}
	return &admissionWebhooks{mutating: m, validating: v}, nil
}

// initWebhook does for one plugin what kube-apiserver's plugin
// initializers do.
func initWebhook(w *generic.Webhook, client kubernetes.Interface, factory informers.SharedInformerFactory, resolver clusterIPResolver) error {
	w.InspectFeatureGates(utilfeature.DefaultFeatureGate)
	w.SetExcludedAdmissionResources(exclusion.Excluded())
	w.SetServiceResolver(resolver)
	w.SetExternalKubeClientSet(client)
	w.SetExternalKubeInformerFactory(factory)
	return w.ValidateInitialization()
}

// serviceResolver reaches webhooks' Services as the admission webhooks do
// (CRD conversion webhooks use it).
func (p *admissionPlugins) serviceResolver() clusterIPResolver {
	return clusterIPResolver{services: p.factory.Core().V1().Services().Lister()}
}

// clusterIPResolver sends a webhook's calls to its Service's cluster IP,
// as kube-apiserver does by default (without --enable-aggregator-routing):
// the node's Service proxy carries them to a ready endpoint.
type clusterIPResolver struct {
	services corelisters.ServiceLister
}

func (r clusterIPResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return proxy.ResolveCluster(r.services, namespace, name, port)
}
