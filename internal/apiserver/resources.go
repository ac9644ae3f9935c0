package apiserver

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// subresources served besides the main resource ("status", "binding", ...).
	subresources []string
	// stored, when set, keeps the objects as another version of the kind.
	stored *storedForm
	// indexFields index watchers by exact-match field selectors.
	indexFields []string
	// shortLived marks objects kept only for Config.EventTTL after their
	// last write, and read from the store rather than a watch cache (events).
	shortLived bool
}

func (r *resource) gvk() schema.GroupVersionKind { return r.gvr.GroupVersion().WithKind(r.kind) }

// servedResources is berth's API surface, scoped as upstream.
func servedResources() []*resource {
	core := corev1.SchemeGroupVersion
	return append([]*resource{
		{
			gvr: core.WithResource("namespaces"), kind: "Namespace", singular: "namespace", shortNames: []string{"ns"},
			newObj: func() runtime.Object { return &corev1.Namespace{} }, newList: func() runtime.Object { return &corev1.NamespaceList{} },
			rules: namespaceRules(), subresources: []string{"status", "finalize"},
		},
		{
			gvr: core.WithResource("pods"), kind: "Pod", singular: "pod", shortNames: []string{"po"}, namespaced: true,
			newObj: func() runtime.Object { return &corev1.Pod{} }, newList: func() runtime.Object { return &corev1.PodList{} },
			rules: podRules(), subresources: []string{"status", "binding", "eviction", "log", "exec", "attach", "portforward"},
			indexFields: []string{"spec.nodeName"},
		},
		{
			gvr: core.WithResource("nodes"), kind: "Node", singular: "node", shortNames: []string{"no"},
			newObj: func() runtime.Object { return &corev1.Node{} }, newList: func() runtime.Object { return &corev1.NodeList{} },
			rules: nodeRules(), subresources: []string{"status"},
		},
		{
			gvr: core.WithResource("events"), kind: "Event", singular: "event", shortNames: []string{"ev"}, namespaced: true,
			newObj: func() runtime.Object { return &corev1.Event{} }, newList: func() runtime.Object { return &corev1.EventList{} },
			rules: coreEventRules(), shortLived: true,
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
			rules: configMapRules(),
		},
		{
			gvr: core.WithResource("secrets"), kind: "Secret", singular: "secret", namespaced: true,
			newObj: func() runtime.Object { return &corev1.Secret{} }, newList: func() runtime.Object { return &corev1.SecretList{} },
			rules: secretRules(),
		},
		{
			gvr: core.WithResource("serviceaccounts"), kind: "ServiceAccount", singular: "serviceaccount", shortNames: []string{"sa"}, namespaced: true,
			newObj: func() runtime.Object { return &corev1.ServiceAccount{} }, newList: func() runtime.Object { return &corev1.ServiceAccountList{} },
			rules: kindRules{}, subresources: []string{"token"},
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
	}, rbacResources()...)
}

// storedForm is the version objects are stored as, with the conversions.
type storedForm struct {
	gv          schema.GroupVersion
	toStorage   func(runtime.Object) (runtime.Object, error)
	fromStorage func(runtime.Object) (runtime.Object, error)
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
	return "/registry/" + r.gvr.Resource // as upstream: no group in the key
}

// key is one object's store key.
func (r *resource) key(namespace, name string) string {
	if r.namespaced {
		return r.keyPrefix() + "/" + namespace + "/" + name
	}
	return r.keyPrefix() + "/" + name
}
