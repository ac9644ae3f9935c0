// Package discovery describes the resources berth serves and answers the
// Kubernetes discovery endpoints (/api, /apis and below, legacy and
// aggregated) from that one description, so that routing and advertising
// can never disagree.
package discovery

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is one served resource of one group-version, with everything a
// discovery client and a router need to know about it.
type Resource struct {
	Group        string // "" for the core group
	Version      string
	Resource     string // plural, lower case: "pods"
	Kind         string
	SingularName string
	Namespaced   bool
	Verbs        []string
	ShortNames   []string
	Categories   []string
	Subresources []Subresource
}

// Subresource is a sub-path of a resource such as pods/status. Group and
// Version are empty when its kind lives in the parent's group-version, and set
// when it does not (pods/eviction takes a policy/v1 Eviction).
type Subresource struct {
	Name    string
	Group   string
	Version string
	Kind    string
	Verbs   []string
	// Connect marks a subresource that streams bytes (log, exec, attach,
	// portforward) instead of reading or writing an object of Kind; Kind is
	// then only what discovery advertises, as kube-apiserver does.
	Connect bool
}

// GroupVersion is the group-version the resource is served under.
func (r Resource) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}
}

// GroupVersionResource names the resource for routing and storage.
func (r Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GroupVersion().WithResource(r.Resource)
}

// GroupVersionKind is the kind of the resource's objects.
func (r Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind)
}

// GroupVersions lists resources' group-versions in first-seen order.
func GroupVersions(resources []Resource) []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range resources {
		if !seen[r.GroupVersion()] {
			seen[r.GroupVersion()] = true
			out = append(out, r.GroupVersion())
		}
	}
	return out
}

// Subresource returns the named subresource, if the resource has it.
func (r Resource) Subresource(name string) (Subresource, bool) {
	for _, s := range r.Subresources {
		if s.Name == name {
			return s, true
		}
	}
	return Subresource{}, false
}

// GroupVersionKind is the kind a subresource accepts and returns, resolved
// against its parent.
func (s Subresource) GroupVersionKind(parent Resource) schema.GroupVersionKind {
	if s.Version == "" {
		return parent.GroupVersion().WithKind(s.Kind)
	}
	return schema.GroupVersionKind{Group: s.Group, Version: s.Version, Kind: s.Kind}
}

// storageVersionHash is the opaque hash kube-apiserver advertises so that
// storage-version migrators can tell when the stored form changes. berth
// stores each resource in its served version, so the served GVK decides it.
func (r Resource) storageVersionHash() string {
	sum := sha256.Sum256([]byte(r.GroupVersionKind().String()))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// Validate reports every defect of a resource list that would make discovery
// lie: missing names, a version without group-version form, duplicates, and
// short names claimed twice.
func Validate(resources []Resource) error {
	var errs []error
	seen := map[schema.GroupVersionResource]bool{}
	shortNames := map[string]schema.GroupVersionResource{}
	for i, r := range resources {
		where := fmt.Sprintf("resources[%d] (%s)", i, r.GroupVersionResource())
		if r.Version == "" || r.Resource == "" || r.Kind == "" || r.SingularName == "" {
			errs = append(errs, fmt.Errorf("%s: version, resource, kind and singularName are required", where))
		}
		if len(r.Verbs) == 0 {
			errs = append(errs, fmt.Errorf("%s: no verbs", where))
		}
		if seen[r.GroupVersionResource()] {
			errs = append(errs, fmt.Errorf("%s: listed twice", where))
		}
		seen[r.GroupVersionResource()] = true
		for _, s := range r.ShortNames {
			// Upstream gives core and events.k8s.io events the same short
			// name; only a short name shared by different resources is ambiguous.
			if other, ok := shortNames[s]; ok && other.Resource != r.Resource {
				errs = append(errs, fmt.Errorf("%s: short name %q already used by %s", where, s, other))
			}
			shortNames[s] = r.GroupVersionResource()
		}
		for _, s := range r.Subresources {
			if s.Name == "" || s.Kind == "" || len(s.Verbs) == 0 {
				errs = append(errs, fmt.Errorf("%s: subresource %q needs a name, a kind and verbs", where, s.Name))
			}
			if s.Group != "" && s.Version == "" {
				errs = append(errs, fmt.Errorf("%s: subresource %q has a group but no version", where, s.Name))
			}
		}
	}
	return errors.Join(errs...)
}
