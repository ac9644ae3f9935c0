// Package apiextensions serves CustomResourceDefinitions and the custom
// resources they define with upstream's apiextensions-apiserver, whole: its
// CRD registry, its handler for custom resources (validation by structural
// schema, defaulting, pruning, CEL rules, conversion webhooks, status and
// scale subresources, server-side apply), and its controllers (naming,
// establishing, the finalizer that deletes a CRD's objects). berth supplies
// what is its own: the storage (k8s.io/apiserver's etcd3 storage over
// berth's store), the filter chain in front (authentication, audit,
// authorization and request info are berth's, already applied), admission,
// and discovery, which lists these groups beside the built-in ones.
package apiextensions

import (
	"fmt"
	"net/http"

	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions/apiextensions/v1"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/webhook"

	"github.com/berth/berth/internal/apiserver/upstream"
)

// Config is what serving CustomResourceDefinitions takes from the API
// server around it.
type Config struct {
	upstream.Config
	// NotFound answers requests for resources no CRD defines.
	NotFound http.Handler
	// ServiceResolver reaches conversion webhooks' Services.
	ServiceResolver webhook.ServiceResolver
	// MasterCount above 1 makes a new CRD wait 5 s before it is
	// Established, so that every replica serves it first (upstream's rule).
	MasterCount int
}

// Server serves /apis/apiextensions.k8s.io and the custom resources'
// groups, as the aggregator's delegate.
type Server struct {
	crds    *apiextensionsapiserver.CustomResourceDefinitions
	openAPI *OpenAPISpecs
}

// New builds the server. The aggregator in front of it serves its requests
// and runs its informer and controllers (internal/apiserver/aggregator).
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("apiextensions: %w", err)
	}
	// CRDs are stored as apiextensions.k8s.io/v1beta1, as kube-apiserver
	// v1.37 still stores them.
	generic := cfg.GenericConfig(apiextensionsapiserver.Codecs, apiextensionsapiserver.Scheme, generatedopenapi.GetOpenAPIDefinitions,
		apiextensionsapiserver.Codecs.LegacyCodec(apiextensionsv1beta1.SchemeGroupVersion))
	generic.MergedResourceConfig = apiextensionsapiserver.DefaultAPIResourceConfigSource()
	config := &apiextensionsapiserver.Config{
		GenericConfig: generic,
		ExtraConfig: apiextensionsapiserver.ExtraConfig{
			// Custom resources are stored as unstructured JSON, as upstream
			// stores them; the CR handler wraps this codec in its
			// conversion and schema coercion.
			CRDRESTOptionsGetter: cfg.RESTOptions(unstructured.UnstructuredJSONScheme),
			MasterCount:          max(cfg.MasterCount, 1),
			ServiceResolver:      cfg.ServiceResolver,
		},
	}
	notFound := cfg.NotFound
	if notFound == nil {
		notFound = http.NotFoundHandler()
	}
	crds, err := config.Complete().New(genericapiserver.NewEmptyDelegateWithCustomHandler(notFound))
	if err != nil {
		return nil, fmt.Errorf("apiextensions: %w", err)
	}
	informer := crds.Informers.Apiextensions().V1().CustomResourceDefinitions()
	openAPI, err := newOpenAPISpecs(informer.Informer(), informer.Lister())
	if err != nil {
		return nil, err
	}
	return &Server{crds: crds, openAPI: openAPI}, nil
}

// OpenAPI is the CRDs' OpenAPI documents, for berth's /openapi handler.
func (s *Server) OpenAPI() *OpenAPISpecs { return s.openAPI }

// Generic is the generic server, the delegate of the aggregator in front.
func (s *Server) Generic() *genericapiserver.GenericAPIServer { return s.crds.GenericAPIServer }

// Informer is the CRD informer (the aggregator registers each CRD's
// group-versions as local APIServices from it).
func (s *Server) Informer() apiextensionsinformers.CustomResourceDefinitionInformer {
	return s.crds.Informers.Apiextensions().V1().CustomResourceDefinitions()
}
