package server

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"
)

// admissionPolicies are kube-apiserver's admission policy plugins
// (upstream's own): MutatingAdmissionPolicy applies the CEL mutations of
// the policies that bindings apply to a request, ValidatingAdmissionPolicy
// evaluates their validations.
type admissionPolicies struct {
	mutating   admission.Interface
	validating admission.Interface
}

// policyPlugin is what both policy plugins take from kube-apiserver's
// plugin initializers.
type policyPlugin interface {
	admission.Interface
	admission.InitializationValidator
	SetExcludedAdmissionResources([]schema.GroupResource)
	SetExternalKubeClientSet(kubernetes.Interface)
	SetExternalKubeInformerFactory(informers.SharedInformerFactory)
	SetDynamicClient(dynamic.Interface)
	SetRESTMapper(meta.RESTMapper)
	SetUnconditionalAuthorizer(authorizer.UnconditionalAuthorizer)
	SetDrainedNotification(<-chan struct{})
}

// newAdmissionPolicies builds both plugins. Their informers come from
// factory; they find parameter kinds through the API's discovery (one
// lazily filled REST mapper) and read parameters with a dynamic client,
// both over the in-process loopback. The mutating plugin reads the
// served OpenAPI v3 for the types its patches apply to. stop ends their
// policy sources.
func newAdmissionPolicies(cfg *rest.Config, client kubernetes.Interface, factory informers.SharedInformerFactory,
	authz authorizer.Authorizer, stop <-chan struct{}) (*admissionPolicies, error) {
	dynamicClient, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("admission policies: %w", err)
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("admission policies: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discoveryClient))
	initialize := func(name string, plugin policyPlugin) error {
		plugin.SetExcludedAdmissionResources(exclusion.Excluded())
		plugin.SetExternalKubeClientSet(client)
		plugin.SetExternalKubeInformerFactory(factory)
		plugin.SetDynamicClient(dynamicClient)
		plugin.SetRESTMapper(mapper)
		plugin.SetUnconditionalAuthorizer(authz)
		plugin.SetDrainedNotification(stop)
		if err := plugin.ValidateInitialization(); err != nil {
			return fmt.Errorf("admission plugin %s: %w", name, err)
		}
		return nil
	}

	mutatingPlugin, err := mutating.NewPlugin(nil)
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", mutating.PluginName, err)
	}
	// The plugin is on only when its gate is, as kube-apiserver's
	// feature-gate initializer turns it on (GA in 1.36, on by default).
	mutatingPlugin.InspectFeatureGates(utilfeature.DefaultFeatureGate)
	if err := initialize(mutating.PluginName, mutatingPlugin); err != nil {
		return nil, err
	}
	validatingPlugin, err := validating.NewPlugin(nil)
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", validating.PluginName, err)
	}
	if err := initialize(validating.PluginName, validatingPlugin); err != nil {
		return nil, err
	}
	return &admissionPolicies{mutating: mutatingPlugin, validating: validatingPlugin}, nil
}
