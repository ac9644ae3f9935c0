package server

import (
	"context"
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
	"k8s.io/client-go/openapi"
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
// served OpenAPI v3 for the types its patches apply to (servedSchemas).
// stop ends their policy sources.
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
	cachedDiscovery := memory.NewMemCacheClient(discoveryClient)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cachedDiscovery)
	initialize := func(name string, plugin policyPlugin, client kubernetes.Interface) error {
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
	schemas := servedSchemas{rest: discoveryClient.RESTClient(), discovery: cachedDiscovery}
	if err := initialize(mutating.PluginName, mutatingPlugin, withSchemas(client, schemas)); err != nil {
		return nil, err
	}
	validatingPlugin, err := validating.NewPlugin(nil)
	if err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", validating.PluginName, err)
	}
	if err := initialize(validating.PluginName, validatingPlugin, client); err != nil {
		return nil, err
	}
	return &admissionPolicies{mutating: mutatingPlugin, validating: validatingPlugin}, nil
}

// withSchemas is client with its discovery's OpenAPI v3 client replaced by
// schemas.
func withSchemas(client kubernetes.Interface, schemas openapi.Client) kubernetes.Interface {
	return schemasClient{Interface: client, discovery: schemasDiscovery{DiscoveryInterfaces: client.Discovery(), schemas: schemas}}
}

type schemasClient struct {
	kubernetes.Interface
	discovery discovery.DiscoveryInterfaces
}

func (c schemasClient) Discovery() discovery.DiscoveryInterfaces { return c.discovery }

type schemasDiscovery struct {
	discovery.DiscoveryInterfaces
	schemas openapi.Client
}

func (d schemasDiscovery) OpenAPIV3() openapi.Client { return d.schemas }

func (d schemasDiscovery) OpenAPIV3WithContext(context.Context) openapi.ClientWithContext {
	return openapi.ToClientWithContext(d.schemas)
}

// servedSchemas is the MutatingAdmissionPolicy plugin's OpenAPI v3 client.
// The plugin lists the /openapi/v3 paths every five seconds and fetches a
// group-version's document when a policy first patches one of its kinds.
// client-go's client lists them from /openapi/v3, whose links carry each
// document's hash, so the server would build every document (40 MiB more
// at idle, measured with hack/footprint.sh); this one lists them from
// discovery, which the server keeps anyway, so only the documents a policy
// uses are ever built. Its links carry no hash: the documents of a berth
// server do not change while it runs.
type servedSchemas struct {
	rest      rest.Interface
	discovery discovery.DiscoveryInterface
}

func (s servedSchemas) Paths() (map[string]openapi.GroupVersion, error) {
	groups, err := s.discovery.ServerGroups()
	if err != nil {
		return nil, fmt.Errorf("listing the served group-versions: %w", err)
	}
	paths := map[string]openapi.GroupVersion{}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			key := "apis/" + v.GroupVersion
			if g.Name == "" {
				key = "api/" + v.Version
			}
			paths[key] = servedSchema{rest: s.rest, key: key}
		}
	}
	return paths, nil
}

// servedSchema is one group-version's OpenAPI v3 document.
type servedSchema struct {
	rest rest.Interface
	key  string
}

func (g servedSchema) Schema(contentType string) ([]byte, error) {
	return g.rest.Get().AbsPath("/openapi/v3", g.key).SetHeader("Accept", contentType).Do(context.Background()).Raw()
}

func (g servedSchema) ServerRelativeURL() string { return "/openapi/v3/" + g.key }
