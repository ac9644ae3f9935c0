package server

import (
	"fmt"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"
)

// newValidatingAdmissionPolicy is kube-apiserver's ValidatingAdmissionPolicy
// plugin (upstream's own): it evaluates the CEL validations of the policies
// that bindings apply to a request. Its informers come from factory; it
// finds parameter kinds through the API's discovery (a lazily filled
// REST mapper) and reads parameters with a dynamic client, both over the
// in-process loopback. stop ends its policy source.
func newValidatingAdmissionPolicy(cfg *rest.Config, client kubernetes.Interface, factory informers.SharedInformerFactory,
	authz authorizer.Authorizer, stop <-chan struct{}) (admission.Interface, error) {
	plugin, err := validating.NewPlugin(nil)
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", validating.PluginName, err)
	}
	dynamicClient, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", validating.PluginName, err)
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", validating.PluginName, err)
	}
	plugin.SetExcludedAdmissionResources(exclusion.Excluded())
	plugin.SetExternalKubeClientSet(client)
	plugin.SetExternalKubeInformerFactory(factory)
	plugin.SetDynamicClient(dynamicClient)
	plugin.SetRESTMapper(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discoveryClient)))
	plugin.SetUnconditionalAuthorizer(authz)
	plugin.SetDrainedNotification(stop)
	if err := plugin.ValidateInitialization(); err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", validating.PluginName, err)
	}
	return plugin, nil
}
