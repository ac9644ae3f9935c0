package apiserver

import (
	"context"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/resolver"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	"k8s.io/kubernetes/pkg/registry/core/event"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/serviceaccount"
)

// resource is one served collection: its REST coordinates, Go types and rules.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	singular   string
	shortNames []string
	namespaced bool
	newObj     func() runtime.Object
	newList    func() runtime.Object
	rules      kindRules
	// registry, when set, replaces rules' write path by upstream's registry
	// strategy; rules still give the field selectors.
	registry *registryKind
	// subresources served besides the main resource ("status", "binding", ...).
	subresources []string
	// stored, when set, keeps the objects as another version of the kind.
	stored *storedForm
	// indexFields index watchers by exact-match field selectors.
	indexFields []string
	// newHooks, when set, builds the hooks run around the kind's writes.
	newHooks func(ctx context.Context, cfg *Config) (*writeHooks, error)
	// shortLived marks objects kept only for Config.EventTTL after their
	// last write, and read from the store rather than a watch cache (events).
	shortLived bool
	// orphanWarning, when set, is the warning a delete that names no
	// propagation policy gets while the kind orphans by default.
	orphanWarning string
	// storagePath, when set, is kube-apiserver's etcd path of the kind
	// where it is not the resource's name ("services/specs").
	storagePath string
	// newMain, when set, wraps the kind's REST for its main endpoint with
	// the kind's own rules, as upstream's storage for the kind does.
	newMain func(*resourceREST) fullREST
	// bootstrap, when set, are objects every cluster has: created at
	// start when absent.
	bootstrap func() []runtime.Object
}

func (r *resource) gvk() schema.GroupVersionKind { return r.gvr.GroupVersion().WithKind(r.kind) }

// newOf returns a constructor of empty T objects.
func newOf[T any, PT interface {
	*T
	runtime.Object
}]() func() runtime.Object {
	return func() runtime.Object { return PT(new(T)) }
}

// registryKind names a kind's upstream registry strategies.
type registryKind struct {
	strategy     upstreamStrategy
	newInternal  func() runtime.Object
	subresources map[string]upstreamStrategy
	// withConfig, when set, builds strategy and subresources when the API
	// is built: strategies that authorize the writer or look at other
	// kinds (admission policies) need the server's authorizer and stores.
	withConfig func(deps strategyDeps) (upstreamStrategy, map[string]upstreamStrategy)
}

// strategyDeps is what registryKind.withConfig may use.
type strategyDeps struct {
	authorizer authorizer.Authorizer
	// resolver maps a served kind to its resource, as discovery would.
	resolver resolver.ResourceResolver
	// stores finds another kind's storage by its resource (filled while the
	// API is built; look up at request time only).
	stores func(schema.GroupVersionResource) *resourceREST
}

// getClusterScoped reads the cluster-scoped object name of gvr from its
// storage, for strategies that look at other kinds.
func (d strategyDeps) getClusterScoped(ctx context.Context, gvr schema.GroupVersionResource, name string) (runtime.Object, error) {
	r := d.stores(gvr)
	if r == nil {
		return nil, fmt.Errorf("%s are not served", gvr.GroupResource())
	}
	return r.Get(withObjectNamespace(ctx, ""), name, &metav1.GetOptions{})
}

// writeStrategy is how r's creates and updates are prepared and validated.
func (r *resource) writeStrategy(typer runtime.ObjectTyper) writeStrategy {
	if r.registry != nil {
		return registryStrategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator,
			upstream: r.registry.strategy, newInternal: r.registry.newInternal, subresources: r.registry.subresources}
	}
	return strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, rules: r.rules, namespaced: r.namespaced}
}

// servedResources is berth's API surface, scoped as upstream.
func servedResources() []*resource {
	core := corev1.SchemeGroupVersion
	return append([]*resource{
		{
			gvr: core.WithResource("namespaces"), kind: "Namespace", singular: "namespace", shortNames: []string{"ns"},
			newObj: func() runtime.Object { return &corev1.Namespace{} }, newList: func() runtime.Object { return &corev1.NamespaceList{} },
			rules: namespaceRules(), subresources: []string{"status", "finalize"},
			registry: &registryKind{strategy: namespace.Strategy, newInternal: func() runtime.Object { return &api.Namespace{} },
				subresources: map[string]upstreamStrategy{"status": namespace.StatusStrategy, "finalize": namespace.FinalizeStrategy}},
		},
		{
			gvr: core.WithResource("pods"), kind: "Pod", singular: "pod", shortNames: []string{"po"}, namespaced: true,
			newObj: func() runtime.Object { return &corev1.Pod{} }, newList: func() runtime.Object { return &corev1.PodList{} },
			rules: podRules(), registry: &registryKind{strategy: pod.Strategy, newInternal: func() runtime.Object { return &api.Pod{} },
				subresources: map[string]upstreamStrategy{"status": pod.StatusStrategy, "ephemeralcontainers": pod.EphemeralContainersStrategy,
					"resize": pod.ResizeStrategy}},
			subresources: []string{"status", "ephemeralcontainers", "resize", "binding", "eviction", "log", "exec", "attach", "portforward", "proxy"},
			indexFields:  []string{"spec.nodeName"},
		},
		{
			gvr: core.WithResource("nodes"), kind: "Node", singular: "node", shortNames: []string{"no"},
			storagePath: "minions", // kube-apiserver's key (storage_migration.go moves older ones)
			newObj:      func() runtime.Object { return &corev1.Node{} }, newList: func() runtime.Object { return &corev1.NodeList{} },
			rules: nodeRules(), registry: &registryKind{strategy: node.Strategy, newInternal: func() runtime.Object { return &api.Node{} },
				subresources: map[string]upstreamStrategy{"status": node.StatusStrategy}},
			subresources: []string{"status", "proxy"},
		},
		{
			gvr: core.WithResource("events"), kind: "Event", singular: "event", shortNames: []string{"ev"}, namespaced: true,
			newObj: func() runtime.Object { return &corev1.Event{} }, newList: func() runtime.Object { return &corev1.EventList{} },
			rules: coreEventRules(), registry: &registryKind{strategy: event.Strategy, newInternal: func() runtime.Object { return &api.Event{} }},
			shortLived: true,
		},
		{
			gvr: eventsv1.SchemeGroupVersion.WithResource("events"), kind: "Event", singular: "event", shortNames: []string{"ev"}, namespaced: true,
			newObj: func() runtime.Object { return &eventsv1.Event{} }, newList: func() runtime.Object { return &eventsv1.EventList{} },
			rules:      eventsV1Rules(),
			stored:     &storedForm{gv: corev1.SchemeGroupVersion, toStorage: eventToStorage, fromStorage: eventFromStorage},
			shortLived: true,
		},
		{
			gvr: core.WithResource("configmaps"), kind: "ConfigMap", singular: "configmap", shortNames: []string{"cm"}, namespaced: true,
			newObj: func() runtime.Object { return &corev1.ConfigMap{} }, newList: func() runtime.Object { return &corev1.ConfigMapList{} },
			registry: &registryKind{strategy: configmap.Strategy, newInternal: func() runtime.Object { return &api.ConfigMap{} }},
		},
		{
			gvr: core.WithResource("secrets"), kind: "Secret", singular: "secret", namespaced: true,
			newObj: func() runtime.Object { return &corev1.Secret{} }, newList: func() runtime.Object { return &corev1.SecretList{} },
			rules: secretRules(), registry: &registryKind{strategy: secret.Strategy, newInternal: func() runtime.Object { return &api.Secret{} }},
		},
		{
			gvr: core.WithResource("serviceaccounts"), kind: "ServiceAccount", singular: "serviceaccount", shortNames: []string{"sa"}, namespaced: true,
			newObj: func() runtime.Object { return &corev1.ServiceAccount{} }, newList: func() runtime.Object { return &corev1.ServiceAccountList{} },
			registry:     &registryKind{strategy: serviceaccount.Strategy, newInternal: func() runtime.Object { return &api.ServiceAccount{} }},
			subresources: []string{"token"},
		},
		{
			gvr: coordinationv1.SchemeGroupVersion.WithResource("leases"), kind: "Lease", singular: "lease", namespaced: true,
			newObj: func() runtime.Object { return &coordinationv1.Lease{} }, newList: func() runtime.Object { return &coordinationv1.LeaseList{} },
			rules: kindRules{allowCreateOnUpdate: true},
		},
		{
			gvr: certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), kind: "CertificateSigningRequest",
			singular: "certificatesigningrequest", shortNames: []string{"csr"},
			newObj:  func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
			newList: func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
			rules:   csrRules(), subresources: []string{"status", "approval"},
		},
	}, slices.Concat(serviceResources(), workloadResources(), appsResources(), batchResources(), autoscalingResources(), policyResources(), volumeResources(), rbacResources(), nodeResources(), disruptionResources(), schedulingResources(), storageResources(), resourceResources(), certificateResources(), networkingResources(), flowControlResources(), admissionRegistrationResources(), storageMigrationResources())...)
}

// storedForm is the version objects are stored as, with the conversions.
type storedForm struct {
	gv          schema.GroupVersion
	toStorage   func(runtime.Object) (runtime.Object, error)
	fromStorage func(runtime.Object) (runtime.Object, error)
}

// storedThroughInternal stores a kind as version gv, converted to and
// from the served version through the internal type with upstream's
// generated conversions, as kube-apiserver does for every kind. The stored
// form gets its version's defaults, which kube-apiserver's storage codec
// adds when it decodes what it stored.
func storedThroughInternal(gv schema.GroupVersion, newInternal, newStored, newServed func() runtime.Object) *storedForm {
	convert := func(newOut func() runtime.Object, defaulted bool) func(runtime.Object) (runtime.Object, error) {
		return func(in runtime.Object) (runtime.Object, error) {
			internal, out := newInternal(), newOut()
			if err := legacyscheme.Scheme.Convert(in, internal, nil); err != nil {
				return nil, fmt.Errorf("converting %T to its internal form: %w", in, err)
			}
			if err := legacyscheme.Scheme.Convert(internal, out, nil); err != nil {
				return nil, fmt.Errorf("converting %T to %T: %w", internal, out, err)
			}
			if defaulted {
				legacyscheme.Scheme.Default(out)
			}
			return out, nil
		}
	}
	return &storedForm{gv: gv, toStorage: convert(newStored, true), fromStorage: convert(newServed, false)}
}

// storageGroupVersion is the version of what the store holds.
func (r *resource) storageGroupVersion() schema.GroupVersion {
	if r.stored != nil {
		return r.stored.gv
	}
	return r.gvr.GroupVersion()
}

// keyPrefix is the store prefix of the resource's objects.
func (r *resource) keyPrefix() string {
	if r.storagePath != "" {
		return "/registry/" + r.storagePath
	}
	return "/registry/" + r.gvr.Resource // as upstream: no group in the key
}

// key is one object's store key.
func (r *resource) key(namespace, name string) string {
	if r.namespaced {
		return r.keyPrefix() + "/" + namespace + "/" + name
	}
	return r.keyPrefix() + "/" + name
}

// buildStrategies builds the strategies of the kinds that need the
// server's authorizer or other kinds' stores (registryKind.withConfig).
func buildStrategies(served []*resource, authz authorizer.Authorizer, stores map[string]*resourceREST) {
	kinds := map[schema.GroupVersionKind]schema.GroupVersionResource{}
	for _, res := range served {
		kinds[res.gvk()] = res.gvr
	}
	deps := strategyDeps{
		authorizer: authz,
		resolver: resolver.ResourceResolverFunc(func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
			if gvr, ok := kinds[gvk]; ok {
				return gvr, nil
			}
			return schema.GroupVersionResource{}, &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
		}),
		stores: func(gvr schema.GroupVersionResource) *resourceREST { return stores[gvr.String()] },
	}
	for _, res := range served {
		if res.registry != nil && res.registry.withConfig != nil {
			res.registry.strategy, res.registry.subresources = res.registry.withConfig(deps)
		}
	}
}
