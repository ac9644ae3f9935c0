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
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	discoveryendpoint "k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericregistry "k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/util/compatibility"
	openapiutil "k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Storage makes upstream's storage for one resource (internal/store/etcd's
// Store.UpstreamStorage).
type Storage interface {
	UpstreamStorage(config *storagebackend.ConfigForResource, resourcePrefix string, newFunc, newListFunc func() runtime.Object) (storage.Interface, func(), error)
}

// Config is what serving CustomResourceDefinitions takes from the API
// server around it.
type Config struct {
	Storage    Storage
	Admission  admission.Interface
	Authorizer authorizer.Authorizer
	// Loopback reaches the API server as itself: the CRD informer and
	// controllers read and write CRDs through it.
	Loopback *rest.Config
	// Discovery receives the served groups (apiextensions.k8s.io, and each
	// CRD's group-versions once established).
	Discovery discoveryendpoint.ResourceManager
	// NotFound answers requests for resources no CRD defines.
	NotFound http.Handler
	// ServiceResolver reaches conversion webhooks' Services.
	ServiceResolver     webhook.ServiceResolver
	MaxRequestBodyBytes int64
	MinRequestTimeout   time.Duration
	// MasterCount above 1 makes a new CRD wait 5 s before it is
	// Established, so that every replica serves it first (upstream's rule).
	MasterCount int
}

// Server serves /apis/apiextensions.k8s.io and the custom resources'
// groups; requests reach it after berth's filters.
type Server struct {
	crds    *apiextensionsapiserver.CustomResourceDefinitions
	openAPI *OpenAPISpecs
}

// New builds the server; Start runs its informer and controllers.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Storage == nil, cfg.Loopback == nil, cfg.Discovery == nil, cfg.Authorizer == nil:
		return nil, errors.New("apiextensions: Storage, Loopback, Discovery and Authorizer are required")
	}
	generic := genericapiserver.NewRecommendedConfig(apiextensionsapiserver.Codecs)
	generic.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	generic.LoopbackClientConfig = cfg.Loopback
	generic.Authorization.Authorizer = cfg.Authorizer
	generic.AdmissionControl = cfg.Admission
	generic.AggregatedDiscoveryGroupManager = cfg.Discovery
	generic.MergedResourceConfig = apiextensionsapiserver.DefaultAPIResourceConfigSource()
	// The CRD registry's field manager builds its type converter from
	// these definitions.
	generic.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(
		openapiutil.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions),
		openapinamer.NewDefinitionNamer(apiextensionsapiserver.Scheme))
	// berth's chain (request info, authentication, audit, impersonation,
	// authorization, panic recovery) runs before requests get here.
	generic.BuildHandlerChainFunc = func(h http.Handler, _ *genericapiserver.Config) http.Handler { return h }
	// Only upstream's discovery addresses would use it, and berth serves
	// discovery itself; Complete insists on a host and port.
	generic.ExternalAddress = "localhost:443"
	generic.EnableIndex, generic.EnableProfiling, generic.EnableMetrics = false, false, false
	// The informer-synced signal only gates upstream's own mux filter,
	// which berth does not mount, and that hook would end the process if
	// the server stopped before the informer synced.
	generic.DisabledPostStartHooks.Insert("crd-informer-synced", "max-in-flight-filter", "storage-object-count-tracker-hook")
	if cfg.MaxRequestBodyBytes > 0 {
		generic.MaxRequestBodyBytes = cfg.MaxRequestBodyBytes
	}
	if cfg.MinRequestTimeout > 0 {
		generic.MinRequestTimeout = int(cfg.MinRequestTimeout / time.Second)
	}
	crdOptions := restOptions{storage: cfg.Storage, codec: apiextensionsapiserver.Codecs.LegacyCodec(apiextensionsv1.SchemeGroupVersion)}
	generic.RESTOptionsGetter = crdOptions
	config := &apiextensionsapiserver.Config{
		GenericConfig: generic,
		ExtraConfig: apiextensionsapiserver.ExtraConfig{
			// Custom resources are stored as unstructured JSON, as upstream
			// stores them; the CR handler wraps this codec in its
			// conversion and schema coercion.
			CRDRESTOptionsGetter: restOptions{storage: cfg.Storage, codec: unstructured.UnstructuredJSONScheme},
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

// ServeHTTP serves one request that berth's filters have let through.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.crds.GenericAPIServer.Handler.ServeHTTP(w, req)
}

// Start runs the CRD informer and upstream's CRD controllers (naming,
// establishing, non-structural schema, API approval, finalizer, discovery)
// until ctx ends, and then releases the storage. They reach the API
// through Config.Loopback, so they wait until the server serves.
func (s *Server) Start(ctx context.Context) {
	s.crds.GenericAPIServer.RunPostStartHooks(ctx)
	context.AfterFunc(ctx, s.crds.GenericAPIServer.Destroy)
}

// restOptions hands upstream's registry the storage berth's store makes.
type restOptions struct {
	storage Storage
	codec   runtime.Codec
}

func (o restOptions) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (genericregistry.RESTOptions, error) {
	config := storagebackend.NewDefaultConfig("/registry", o.codec)
	return genericregistry.RESTOptions{
		StorageConfig:           config.ForResource(resource),
		Decorator:               o.decorate,
		EnableGarbageCollection: true,
		DeleteCollectionWorkers: 1,
		// Upstream's keys: /registry/<group>/<resource>/...
		ResourcePrefix: resource.Group + "/" + resource.Resource,
	}, nil
}

func (o restOptions) decorate(config *storagebackend.ConfigForResource, resourcePrefix string, _ func(runtime.Object) (string, error),
	newFunc, newListFunc func() runtime.Object, _ storage.AttrFunc, _ storage.IndexerFuncs, _ *cache.Indexers,
) (storage.Interface, factory.DestroyFunc, error) {
	st, destroy, err := o.storage.UpstreamStorage(config, resourcePrefix, newFunc, newListFunc)
	if err != nil {
		return nil, nil, err
	}
	return st, destroy, nil
}
