// Package apiserver is berth's Kubernetes REST core: the served resources,
// their strategies (defaulting, validation, the spec/status split, graceful
// deletion), and the HTTP handlers that serve them in JSON, YAML, protobuf and
// Table, with Kubernetes Status errors. The request handlers themselves are
// k8s.io/apiserver's (create, get, list/watch, update, patch incl. apply,
// delete): berth supplies the storage behind them, over internal/store, and
// authentication, authorization and admission plug in through Config.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	apistorage "k8s.io/apiserver/pkg/storage"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	flowcontrolrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	restclient "k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/berth/berth/internal/apiserver/aggregator"
	"github.com/berth/berth/internal/apiserver/apiextensions"
	"github.com/berth/berth/internal/apiserver/discovery"
	"github.com/berth/berth/internal/apiserver/openapi"
	"github.com/berth/berth/internal/apiserver/tables"
	"github.com/berth/berth/internal/apiserver/upstream"
	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/watchcache"
)

// Config is what the API server needs. Store, Authenticator and Authorizer
// are required: there is no anonymous, unauthorized mode.
type Config struct {
	Store         store.Interface
	Authenticator authenticator.Request
	Authorizer    authorizer.Authorizer
	// RuleResolver lists what a user may do (SelfSubjectRulesReview,
	// `kubectl auth can-i --list`); nil answers every such review as
	// incomplete.
	RuleResolver authorizer.RuleResolver
	// Admission is the deployment's admission chain (NodeRestriction, Pod
	// Security, ...); the kinds' built-in plugins run after it.
	Admission admission.Interface
	Logger    *slog.Logger
	// MaxRequestBodyBytes caps request bodies (413 beyond); default 3 MiB, as upstream.
	MaxRequestBodyBytes int64
	// MinRequestTimeout is the shortest server-chosen watch duration (a
	// random one up to twice this is picked when the client sets no
	// timeoutSeconds); default 30 minutes, as upstream.
	MinRequestTimeout time.Duration
	// EventTTL is how long an event is kept after its last write; default
	// one hour, as kube-apiserver's --event-ttl.
	EventTTL time.Duration
	// WatchHistorySize is how many recent events of each resource the watch
	// cache keeps, so that watches resume (older resourceVersions get 410
	// Gone and clients re-list); 0 means the cache's default (1000).
	WatchHistorySize int

	// AuditSink, with AuditPolicy, receives k8s.io/apiserver's audit events
	// of every request (internal/auth/audit provides both); nil records none.
	AuditSink   audit.Sink
	AuditPolicy audit.PolicyRuleEvaluator

	// Metrics, when set, receives the API server's Prometheus series
	// (requests, watch caches), which are then served at /metrics.
	Metrics *prometheus.Registry

	// NodeTransport reaches node agents' servers for pods/log, exec,
	// attach and portforward: it presents the API server's client
	// certificate and verifies the nodes' serving certificates. Nil turns
	// those subresources into 503s.
	NodeTransport http.RoundTripper

	// ReadView, when set, may change what a requester reads (get, list,
	// watch): nodes get their view of pods (internal/auth/node.PodView).
	ReadView ReadView

	// ServiceAccountTokens, when set, serves serviceaccounts/token
	// (TokenRequest); without it that subresource answers 503.
	ServiceAccountTokens *ServiceAccountTokens

	// OpenIDMetadata, when set, serves the service-account issuer's OIDC
	// discovery document and key set, as kube-apiserver does.
	OpenIDMetadata serviceaccount.OpenIDMetadataProvider

	// LocalReads, when set, is filled with the server's collection readers
	// for its own control loops' informers (LocalReads.ListWatch).
	LocalReads *LocalReads

	// EnableProfiling serves Go's pprof endpoints under /debug/pprof/ to
	// users the authorizer allows (off by default: profiles reveal
	// memory contents and cost CPU).
	EnableProfiling bool

	// ControllerDebug, when set, serves the server's control loops' debug
	// pages under /debug/controllers/ to users the authorizer allows.
	ControllerDebug *ControllerDebug

	// ServiceClusterIPRange is where Services' cluster IPs come from
	// (--service-cluster-ip-range; nil: 10.96.0.0/12, as kubeadm), and
	// ServiceNodePortRange their node ports (--service-node-port-range;
	// zero: 30000-32767). ParseServiceRanges parses both flags.
	ServiceClusterIPRange *net.IPNet
	ServiceNodePortRange  utilnet.PortRange
	// ServiceAllocations, when set, is filled with the stored bitmaps
	// Services allocate from, for the repair controllers.
	ServiceAllocations *ServiceAllocations

	// Loopback reaches this API server as itself (system:apiserver). With
	// a Store that makes upstream's storage (internal/store/etcd), it turns
	// on CustomResourceDefinitions, whose informer and controllers use it.
	Loopback *restclient.Config
	// WebhookServiceResolver reaches CRD conversion webhooks' Services.
	WebhookServiceResolver webhook.ServiceResolver
	// Informers are the server's shared informers, required with Loopback:
	// the aggregator reads extension API servers' Services and
	// EndpointSlices from them (aggregator.Config.Informers).
	Informers informers.SharedInformerFactory
	// ProxyClientCertFile and ProxyClientKeyFile are the client
	// certificate the aggregator presents to extension API servers.
	ProxyClientCertFile, ProxyClientKeyFile string

	// FlowControl, when set, is API priority and fairness: every request is
	// classified by the FlowSchemas and queued, dispatched or refused (429)
	// by its priority level, as kube-apiserver's filter does
	// (internal/server runs its configuration controller). Without it,
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight (0: no limit)
	// bound the requests served at once, as kube-apiserver's
	// --enable-priority-and-fairness=false.
	FlowControl                                      utilflowcontrol.Interface
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int

	// newReader overrides how collections are read (tests); the watch
	// cache by default.
	newReader readerFactory
}

const (
	defaultMaxRequestBodyBytes = 3 << 20
	defaultMinRequestTimeout   = 30 * time.Minute
	defaultEventTTL            = time.Hour
)

func (c *Config) complete() error {
	switch {
	case c.Store == nil:
		return errors.New("apiserver: Config.Store is required")
	case c.Authenticator == nil:
		return errors.New("apiserver: Config.Authenticator is required")
	case c.Authorizer == nil:
		return errors.New("apiserver: Config.Authorizer is required")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Admission == nil {
		c.Admission = admission.NewChainHandler()
	}
	admit, err := withBuiltinAdmission(c.Admission)
	if err != nil {
		return err
	}
	c.Admission = admit
	if c.MaxRequestBodyBytes <= 0 {
		c.MaxRequestBodyBytes = defaultMaxRequestBodyBytes
	}
	if c.MinRequestTimeout <= 0 {
		c.MinRequestTimeout = defaultMinRequestTimeout
	}
	if c.EventTTL <= 0 {
		c.EventTTL = defaultEventTTL
	}
	if c.ServiceClusterIPRange == nil || c.ServiceNodePortRange.Size == 0 {
		cidr, ports, err := ParseServiceRanges("", "")
		if err != nil {
			return err
		}
		if c.ServiceClusterIPRange == nil {
			c.ServiceClusterIPRange = cidr
		}
		if c.ServiceNodePortRange.Size == 0 {
			c.ServiceNodePortRange = ports
		}
	}
	if c.newReader == nil {
		var cacheMetrics *watchcache.Metrics
		if c.Metrics != nil {
			var err error
			if cacheMetrics, err = watchcache.NewMetrics(c.Metrics); err != nil {
				return fmt.Errorf("apiserver: watch cache metrics: %w", err)
			}
		}
		c.newReader = watchCacheReaders(cacheMetrics)
	}
	return nil
}

// New builds the API server's HTTP handler. Background work (the namespace
// controller, collection readers) runs until ctx ends; the handler must not
// be used after that. The system namespaces, with their default
// ServiceAccounts, and the other objects every cluster has (the system
// PriorityClasses) exist before New returns.
func New(ctx context.Context, cfg Config) (http.Handler, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	if err := migrateStorage(ctx, cfg.Store, cfg.Logger); err != nil {
		return nil, fmt.Errorf("moving stored objects to their keys: %w", err)
	}
	resources := servedResources()
	scheme, err := newScheme(resources)
	if err != nil {
		return nil, err
	}
	c := newCodecs(scheme)
	api, err := buildAPI(ctx, &cfg, c, resources)
	if err != nil {
		return nil, err
	}
	if api.extensions != nil {
		api.extensions.Start(ctx)
	}
	if err := api.namespaces.ensureSystemNamespaces(ctx); err != nil {
		return nil, err
	}
	if err := ensureDefaultServiceAccounts(ctx, api.serviceAccounts); err != nil {
		return nil, err
	}
	for _, r := range api.bootstrapped {
		if err := createBootstrapObjects(ctx, r); err != nil {
			return nil, err
		}
	}

	mux := http.NewServeMux()
	mux.Handle("/api/", api)
	mux.Handle("/apis/", api)
	mux.Handle("/api", api)
	mux.Handle("/apis", api)
	mux.Handle("/version", versionHandler())
	health := healthHandler(cfg.Store)
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		mux.Handle(path, health)
		mux.Handle(path+"/", health)
	}
	mux.Handle("/openapi/", api.openapi)
	if cfg.OpenIDMetadata != nil {
		addOpenIDMetadata(mux, cfg.OpenIDMetadata)
	}
	if snap, ok := cfg.Store.(store.Snapshotter); ok {
		mux.Handle(SnapshotPath, snapshotHandler(snap, cfg.Logger))
	}
	if cfg.EnableProfiling {
		addProfiling(mux)
	}
	if cfg.FlowControl != nil {
		addFlowControlDebug(mux, cfg.FlowControl)
	}
	if cfg.ControllerDebug != nil {
		mux.Handle(controllerDebugPath, cfg.ControllerDebug)
	}
	mux.Handle("/", notFoundHandler(c))

	var handler http.Handler = mux
	if cfg.Metrics != nil {
		mux.Handle("/metrics", metricsHandler(cfg.Metrics))
		handler = instrument(handler)
	}
	handler = filters.WithAuthorization(handler, cfg.Authorizer, c.negotiated)
	handler = withRequestLimits(handler, &cfg, api.objectStats)
	handler = withImpersonation(handler, cfg.Authorizer, c.negotiated)
	handler = filters.WithAudit(handler, cfg.AuditSink, cfg.AuditPolicy, longRunning)
	unauthorized := filters.WithFailedAuthenticationAudit(filters.Unauthorized(c.negotiated), cfg.AuditSink, cfg.AuditPolicy)
	handler = filters.WithAuthentication(handler, cfg.Authenticator, unauthorized, nil, nil)
	handler = filters.WithWarningRecorder(handler)
	handler = filters.WithCacheControl(handler)
	handler = filters.WithRequestInfo(handler, &request.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	})
	handler = filters.WithRequestReceivedTimestamp(handler)
	handler = withPanicRecovery(handler, c.negotiated, cfg.Logger)
	if cfg.AuditSink == nil || cfg.AuditPolicy == nil {
		handler = withAuditOff(handler)
	}
	handler = filters.WithAuditInit(handler) // the upstream handlers record into it
	return handler, nil
}

// apiSet is every served endpoint, plus the pieces with a life of their own.
type apiSet struct {
	codecs          codecs
	endpoints       map[endpointKey]*endpoint
	discovery       http.Handler
	openapi         http.Handler
	namespaces      *namespaceREST
	serviceAccounts *resourceREST
	// bootstrapped are the kinds with objects every cluster has.
	bootstrapped []*resourceREST
	// nodeTransport is Config.NodeTransport, for the connect subresources.
	nodeTransport http.RoundTripper
	// serviceAccountTokens is Config.ServiceAccountTokens, for serviceaccounts/token.
	serviceAccountTokens *ServiceAccountTokens
	// proxyTransport reaches pods and Service endpoints for the proxy subresources.
	proxyTransport http.RoundTripper
	authorizer     authorizer.Authorizer
	// extensions serves APIServices and what they proxy, CRDs and custom
	// resources; nil without them.
	extensions *aggregator.Server
	// objectCounts are the cached resources' statistics by group-resource
	// ("pods", "deployments.apps"), for request limits' work estimates.
	objectCounts map[string]func() (apistorage.Stats, error)
	// extensionCounts are the extension servers' resources' statistics
	// (custom resources, APIServices), counted each minute in the store.
	extensionCounts flowcontrolrequest.StorageObjectCountTracker
}

func buildAPI(ctx context.Context, cfg *Config, c codecs, served []*resource) (*apiSet, error) {
	typeConverter, err := openapi.TypeConverter()
	if err != nil {
		return nil, fmt.Errorf("schemas for server-side apply: %w", err)
	}
	tableConvertor, err := tables.New(time.Now)
	if err != nil {
		return nil, fmt.Errorf("table convertor: %w", err)
	}
	factory := &scopeFactory{
		codecs: c, authorizer: cfg.Authorizer, admit: cfg.Admission, typeConverter: typeConverter,
		maxBody: cfg.MaxRequestBodyBytes, minRequestTimeout: cfg.MinRequestTimeout,
		equivalent: runtime.NewEquivalentResourceRegistry(),
	}
	api := &apiSet{codecs: c, endpoints: map[endpointKey]*endpoint{}, nodeTransport: cfg.NodeTransport,
		serviceAccountTokens: cfg.ServiceAccountTokens, proxyTransport: newProxyTransport(), authorizer: cfg.Authorizer,
		objectCounts: map[string]func() (apistorage.Stats, error){}}
	stores := map[string]*resourceREST{}
	if cfg.LocalReads != nil {
		cfg.LocalReads.authorizer = cfg.Authorizer
	}
	buildStrategies(served, cfg.Authorizer, stores)
	for _, res := range served {
		r, err := newResourceREST(ctx, cfg, c, res, tableConvertor)
		if err != nil {
			return nil, err
		}
		stores[res.gvr.String()] = r
		if counted, ok := r.reader.(objectCounter); ok {
			api.objectCounts[res.gvr.GroupResource().String()] = counted.ObjectStats
		}
		if cfg.LocalReads != nil {
			cfg.LocalReads.add(res, r.reader)
		}
		switch {
		case res.gvr.Resource == "namespaces" && res.gvr.Group == "":
			api.namespaces = &namespaceREST{resourceREST: r}
		case res.gvr.Resource == "serviceaccounts" && res.gvr.Group == "":
			api.serviceAccounts = r
		}
		if res.bootstrap != nil {
			api.bootstrapped = append(api.bootstrapped, r)
		}
	}
	if err := api.addAccessReviews(factory, cfg.Authorizer); err != nil {
		return nil, err
	}
	if err := api.addRulesReview(factory, cfg.RuleResolver); err != nil {
		return nil, err
	}
	if err := api.addAuthenticationReviews(factory, cfg.Authenticator, apiAudiences(cfg)); err != nil {
		return nil, err
	}
	for _, r := range stores {
		if err := api.addEndpoints(factory, r, stores); err != nil {
			return nil, err
		}
	}
	resources := discovery.Default()
	if err := discovery.Validate(resources); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	extensions := discovery.NewExtensions()
	var crds *apiextensions.Server
	counts := flowcontrolrequest.NewStorageObjectCountTracker()
	if api.extensions, crds, err = newExtensions(cfg, c, extensions, resources, counts); err != nil {
		return nil, err
	}
	if api.extensions != nil {
		api.extensionCounts = counts
		// The tracker forgets the counts of resources no longer polled
		// (a deleted CRD's).
		go counts.RunUntil(ctx.Done())
	}
	api.discovery = discovery.Handler(resources, extensions)
	// The handlers reject unknown and duplicate fields under
	// fieldValidation=Strict, so kubectl may leave validation to the server.
	opts := openapi.Options{ServerSideFieldValidation: true}
	if crds != nil {
		opts.Extensions = crds.OpenAPI()
	}
	if api.openapi, err = openapi.Handler(resources, opts); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return api, nil
}

func newResourceREST(ctx context.Context, cfg *Config, c codecs, res *resource, table rest.TableConvertor) (*resourceREST, error) {
	objects := &objectStore{res: res, store: cfg.Store, codecs: c, logger: cfg.Logger.With("resource", res.gvr.String()), readView: cfg.ReadView}
	newReader := cfg.newReader
	if res.shortLived {
		objects.ttl = cfg.EventTTL
		// Events are written often and read rarely: kube-apiserver's
		// default watch cache sizes leave them uncached, and so does berth.
		// A cache would decode and hold every event for no reader.
		newReader = newStoreReader
	}
	reader, err := newReader(ctx, readerSpec{
		Store:       cfg.Store,
		Resource:    res.gvr.GroupResource(),
		Prefix:      res.keyPrefix() + "/",
		Decode:      objects.decode,
		Attrs:       attrsFunc(res),
		NewObj:      res.newObj,
		IndexFields: res.indexFields,
		HistorySize: cfg.WatchHistorySize,
		Logger:      objects.logger,
	})
	if err != nil {
		return nil, fmt.Errorf("reader for %s: %w", res.gvr, err)
	}
	objects.reader = reader
	var hooks *writeHooks
	if res.newHooks != nil {
		if hooks, err = res.newHooks(ctx, cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", res.gvr, err)
		}
	}
	return &resourceREST{
		objectStore: objects,
		strategy:    res.writeStrategy(c.scheme),
		table:       table,
		hooks:       hooks,
	}, nil
}

// forStatus returns a view of r that updates only status, through subresource.
func (r *resourceREST) forStatus(subresource string) *resourceREST {
	status := *r
	status.strategy = r.strategy.forSubresource(subresource)
	status.hooks = r.hooks.forStatus()
	return &status
}

// longRunning is kube-apiserver's long-running request check (watches,
// proxies and the connect subresources): the audit filter completes their
// events when they end, and request limits do not hold seats for them
// (watches hold one until their initial events are sent).
var longRunning = genericfilters.BasicLongRunningRequestCheck(
	sets.NewString("watch", "proxy"),
	sets.NewString("attach", "exec", "proxy", "log", "portforward"),
)

// newExtensions builds the API aggregator with the CRD server behind it
// when the configuration allows it: a loopback client and a store that
// makes upstream's storage.
func newExtensions(cfg *Config, c codecs, groups *discovery.Extensions, builtIn []discovery.Resource,
	counts flowcontrolrequest.StorageObjectCountTracker) (*aggregator.Server, *apiextensions.Server, error) {
	st, ok := cfg.Store.(upstream.Storage)
	if !ok || cfg.Loopback == nil {
		return nil, nil, nil
	}
	shared := upstream.Config{
		Storage: st, Admission: cfg.Admission, Authorizer: cfg.Authorizer, Loopback: cfg.Loopback, Discovery: groups,
		MaxRequestBodyBytes: cfg.MaxRequestBodyBytes, MinRequestTimeout: cfg.MinRequestTimeout, ObjectCounts: counts,
	}
	crds, err := apiextensions.New(apiextensions.Config{Config: shared, NotFound: notFoundHandler(c), ServiceResolver: cfg.WebhookServiceResolver})
	if err != nil {
		return nil, nil, err
	}
	local := discovery.GroupVersions(builtIn)
	local = append(local, apiextensionsv1.SchemeGroupVersion, apiregistrationv1.SchemeGroupVersion)
	agg, err := aggregator.New(aggregator.Config{Config: shared, CRDs: crds, Local: local, Informers: cfg.Informers,
		ProxyClientCertFile: cfg.ProxyClientCertFile, ProxyClientKeyFile: cfg.ProxyClientKeyFile})
	if err != nil {
		return nil, nil, err
	}
	return agg, crds, nil
}
