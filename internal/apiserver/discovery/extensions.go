package discovery

import (
	"net/http"
	"sort"
	"sync"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeversion "k8s.io/apimachinery/pkg/version"
	discoveryendpoint "k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
)

// Extensions are the API groups served beside the built-in resources whose
// resources come and go while the server runs: apiextensions.k8s.io and
// the groups of CustomResourceDefinitions. apiextensions-apiserver keeps
// them current through upstream's aggregated-discovery ResourceManager
// interface, which Extensions implements; Handler serves them after the
// built-in groups, in both discovery forms.
type Extensions struct {
	mu         sync.Mutex
	groups     map[string]*extensionGroup
	generation uint64 // bumped on every change, so the handler knows to rebuild
	callbacks  []func()

	ownOnce sync.Once
	own     http.Handler // ServeHTTP's handler, built on first use
}

type extensionGroup struct {
	priority int
	versions map[string]extensionVersion
}

type extensionVersion struct {
	discovery apidiscoveryv2.APIVersionDiscovery
	priority  int
}

var _ discoveryendpoint.ResourceManager = (*Extensions)(nil)

// NewExtensions returns an empty set of extension groups.
func NewExtensions() *Extensions {
	return &Extensions{groups: map[string]*extensionGroup{}}
}

// AddGroupVersion adds or replaces one group-version's resources.
func (e *Extensions) AddGroupVersion(groupName string, value apidiscoveryv2.APIVersionDiscovery) {
	e.change(func() {
		g, ok := e.groups[groupName]
		if !ok {
			g = &extensionGroup{versions: map[string]extensionVersion{}}
			e.groups[groupName] = g
		}
		v := g.versions[value.Version]
		v.discovery = *value.DeepCopy()
		g.versions[value.Version] = v
	})
}

// SetGroupVersionPriority orders a group among the others and a version
// within its group (higher first), as kube-apiserver's APIService
// priorities do.
func (e *Extensions) SetGroupVersionPriority(gv metav1.GroupVersion, groupPriority, versionPriority int) {
	e.change(func() {
		g, ok := e.groups[gv.Group]
		if !ok {
			return
		}
		v, ok := g.versions[gv.Version]
		if !ok {
			return
		}
		g.priority = max(g.priority, groupPriority)
		v.priority = versionPriority
		g.versions[gv.Version] = v
	})
}

// RemoveGroup forgets a group and all its versions.
func (e *Extensions) RemoveGroup(groupName string) {
	e.change(func() { delete(e.groups, groupName) })
}

// RemoveGroupVersion forgets one version; a group without versions is gone.
func (e *Extensions) RemoveGroupVersion(gv metav1.GroupVersion) {
	e.change(func() {
		g, ok := e.groups[gv.Group]
		if !ok {
			return
		}
		delete(g.versions, gv.Version)
		if len(g.versions) == 0 {
			delete(e.groups, gv.Group)
		}
	})
}

// SetGroups replaces every group with groups.
func (e *Extensions) SetGroups(groups []apidiscoveryv2.APIGroupDiscovery) {
	e.change(func() {
		e.groups = map[string]*extensionGroup{}
		for _, g := range groups {
			eg := &extensionGroup{versions: map[string]extensionVersion{}}
			for _, v := range g.Versions {
				eg.versions[v.Version] = extensionVersion{discovery: *v.DeepCopy()}
			}
			e.groups[g.Name] = eg
		}
	})
}

// WithSource returns e itself: berth has one source of extension groups,
// so there are no duplicates to settle.
func (e *Extensions) WithSource(discoveryendpoint.Source) discoveryendpoint.ResourceManager {
	return e
}

// AddInvalidationCallback calls callback after every change.
func (e *Extensions) AddInvalidationCallback(callback func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.callbacks = append(e.callbacks, callback)
}

// ServeHTTP answers as the aggregated /apis document would with no
// built-in groups; berth mounts Handler instead, which merges both.
func (e *Extensions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.ownOnce.Do(func() { e.own = Handler(nil, e) })
	e.own.ServeHTTP(w, r)
}

func (e *Extensions) change(apply func()) {
	e.mu.Lock()
	apply()
	e.generation++
	callbacks := e.callbacks
	e.mu.Unlock()
	for _, cb := range callbacks {
		cb()
	}
}

// snapshot returns the generation and the extension groups' resources:
// groups by priority (higher first) then name, versions by priority then
// Kubernetes version order, as kube-apiserver's aggregated discovery sorts.
func (e *Extensions) snapshot() (uint64, []Resource) {
	if e == nil {
		return 0, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	names := make([]string, 0, len(e.groups))
	for name := range e.groups {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := e.groups[names[i]], e.groups[names[j]]
		if a.priority != b.priority {
			return a.priority > b.priority
		}
		return names[i] < names[j]
	})
	var out []Resource
	for _, name := range names {
		g := e.groups[name]
		versions := make([]extensionVersion, 0, len(g.versions))
		for _, v := range g.versions {
			versions = append(versions, v)
		}
		sort.Slice(versions, func(i, j int) bool {
			if versions[i].priority != versions[j].priority {
				return versions[i].priority > versions[j].priority
			}
			return kubeversion.CompareKubeAwareVersionStrings(versions[i].discovery.Version, versions[j].discovery.Version) > 0
		})
		for _, v := range versions {
			for _, r := range v.discovery.Resources {
				out = append(out, resourceOf(name, v.discovery.Version, r))
			}
		}
	}
	return e.generation, out
}

// resourceOf is one aggregated-discovery entry as berth's Resource.
func resourceOf(group, version string, r apidiscoveryv2.APIResourceDiscovery) Resource {
	res := Resource{
		Group: group, Version: version, Resource: r.Resource,
		SingularName: r.SingularResource,
		Namespaced:   r.Scope == apidiscoveryv2.ScopeNamespace,
		Verbs:        r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
	}
	if r.ResponseKind != nil {
		res.Kind = r.ResponseKind.Kind
	}
	for _, s := range r.Subresources {
		sub := Subresource{Name: s.Subresource, Verbs: s.Verbs}
		if k := s.ResponseKind; k != nil {
			sub.Kind = k.Kind
			if k.Group != group || k.Version != version {
				sub.Group, sub.Version = k.Group, k.Version
			}
		}
		res.Subresources = append(res.Subresources, sub)
	}
	return res
}
