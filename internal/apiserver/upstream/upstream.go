// Package upstream is what berth gives the k8s.io/apiserver generic servers
// it runs whole behind its own filters (apiextensions-apiserver for CRDs,
// kube-aggregator for APIServices): their generic configuration, with
// berth's authorizer, admission and discovery, and their storage, made by
// berth's store. Requests reach them after berth's chain (request info,
// authentication, audit, impersonation, authorization, panic recovery), so
// their own handler chain is empty.
package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	discoveryendpoint "k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericregistry "k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/util/compatibility"
	flowcontrolrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	openapiutil "k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kube-openapi/pkg/common"
)

// Storage makes upstream's storage for one resource (internal/store/etcd's
// Store.UpstreamStorage).
type Storage interface {
	UpstreamStorage(config *storagebackend.ConfigForResource, resourcePrefix string, newFunc, newListFunc func() runtime.Object) (storage.Interface, func(), error)
}

// Config is what every such server takes from the API server around it.
type Config struct {
	Storage    Storage
	Admission  admission.Interface
	Authorizer authorizer.Authorizer
	// Loopback reaches the API server as itself: the servers' informers and
	// controllers read and write through it.
	Loopback *rest.Config
	// Discovery receives the groups they serve.
	Discovery           discoveryendpoint.ResourceManager
	MaxRequestBodyBytes int64
	MinRequestTimeout   time.Duration
	// ObjectCounts receives each resource's object count and size, polled
	// each minute from its storage as kube-apiserver does, for API priority
	// and fairness's work estimates; nil counts nothing.
	ObjectCounts flowcontrolrequest.StorageObjectCountTracker
}

// Validate reports a missing required field.
func (c Config) Validate() error {
	if c.Storage == nil || c.Loopback == nil || c.Discovery == nil || c.Authorizer == nil {
		return errors.New("storage, loopback client, discovery and authorizer are required")
	}
	return nil
}

// GenericConfig is the generic server configuration for codecs' and
// scheme's types, whose OpenAPI definitions (the field manager's type
// converter is built from them) are definitions.
func (c Config) GenericConfig(codecs serializer.CodecFactory, scheme *runtime.Scheme, definitions common.GetOpenAPIDefinitions, storageCodec runtime.Codec) *genericapiserver.RecommendedConfig {
	generic := genericapiserver.NewRecommendedConfig(codecs)
	generic.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	generic.LoopbackClientConfig = c.Loopback
	generic.Authorization.Authorizer = c.Authorizer
	generic.AdmissionControl = c.Admission
	generic.AggregatedDiscoveryGroupManager = c.Discovery
	// Only installing a group reads this: its resources' models, for its
	// field manager (berth serves /openapi itself). DefaultOpenAPIV3Config's
	// would keep every definition the generator knows (apiextensions' are
	// all of k8s.io/api's), 0.8 MiB for the two servers, for the life of
	// the process: in its Definitions, and, since it sets
	// GetOperationIDAndTags, in every model builder, which builder3 keeps
	// alive through the route adapter it then stores in the config.
	generic.OpenAPIV3Config = &common.OpenAPIV3Config{
		GetDefinitions:    openapiutil.GetOpenAPIDefinitionsWithoutDisabledFeatures(definitions),
		GetDefinitionName: openapinamer.NewDefinitionNamer(scheme).GetDefinitionName,
	}
	generic.BuildHandlerChainFunc = func(h http.Handler, _ *genericapiserver.Config) http.Handler { return h }
	// Only upstream's discovery addresses would use it, and berth serves
	// discovery itself; Complete insists on a host and port.
	generic.ExternalAddress = "localhost:443"
	generic.EnableIndex, generic.EnableProfiling, generic.EnableMetrics = false, false, false
	// The informer-synced signals only gate upstream's own mux filter,
	// which berth does not mount, and a hook that fails ends the process.
	generic.DisabledPostStartHooks.Insert("crd-informer-synced", "max-in-flight-filter", "storage-object-count-tracker-hook")
	if c.MaxRequestBodyBytes > 0 {
		generic.MaxRequestBodyBytes = c.MaxRequestBodyBytes
	}
	if c.MinRequestTimeout > 0 {
		generic.MinRequestTimeout = int(c.MinRequestTimeout / time.Second)
	}
	generic.RESTOptionsGetter = c.RESTOptions(storageCodec)
	return generic
}

// countPollPeriod is how often a resource's objects are counted for
// ObjectCounts: kube-apiserver's --etcd-count-metric-poll-period.
const countPollPeriod = time.Minute

// RESTOptions hands upstream's registry the storage berth's store makes,
// encoding with codec, behind upstream's watch cache.
func (c Config) RESTOptions(codec runtime.Codec) genericregistry.RESTOptionsGetter {
	return restOptions{storage: c.Storage, codec: codec, counts: c.ObjectCounts}
}

type restOptions struct {
	storage Storage
	codec   runtime.Codec
	counts  flowcontrolrequest.StorageObjectCountTracker
}

func (o restOptions) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (genericregistry.RESTOptions, error) {
	config := storagebackend.NewDefaultConfig("/registry", o.codec)
	options := genericregistry.RESTOptions{
		StorageConfig:           config.ForResource(resource),
		Decorator:               o.decorate,
		EnableGarbageCollection: true,
		DeleteCollectionWorkers: 1,
		// Upstream's keys: /registry/<group>/<resource>/...
		ResourcePrefix: resource.Group + "/" + resource.Resource,
	}
	if o.counts != nil {
		options.CountMetricPollPeriod = countPollPeriod
		options.StorageObjectCountTracker = o.counts
	}
	return options, nil
}

// decorate is upstream's StorageWithCacher over the storage berth's store
// makes: upstream's cacher in front of each resource, as kube-apiserver
// puts it in front of every CRD's, custom resource's and APIService's
// storage (generic.NewRawStorage would dial etcd, and the embedded member
// has no listener).
func (o restOptions) decorate(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
	newFunc, newListFunc func() runtime.Object, attrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers,
) (storage.Interface, factory.DestroyFunc, error) {
	raw, destroyRaw, err := o.storage.UpstreamStorage(config, resourcePrefix, newFunc, newListFunc)
	if err != nil {
		return nil, nil, err
	}
	cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
		Storage:             raw,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       config.GroupResource,
		EventsHistoryWindow: config.EventsHistoryWindow,
		ResourcePrefix:      resourcePrefix,
		KeyFunc:             keyFunc,
		NewFunc:             newFunc,
		NewListFunc:         newListFunc,
		GetAttrsFunc:        attrs,
		IndexerFuncs:        triggers,
		Indexers:            indexers,
		Codec:               config.Codec,
	})
	if err != nil {
		destroyRaw()
		return nil, nil, fmt.Errorf("watch cache for %s: %w", config.GroupResource, err)
	}
	delegator := cacherstorage.NewCacheDelegator(cacher, raw)
	var once sync.Once
	destroy := func() {
		once.Do(func() {
			delegator.Stop()
			cacher.Stop()
			destroyRaw()
		})
	}
	return delegator, destroy, nil
}
