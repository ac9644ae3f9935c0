package openapi

import (
	"fmt"
	"strings"

	"github.com/berth/berth/internal/apiserver/discovery"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/common"
)

// Media types the REST core reads and writes for objects.
var (
	objectTypes = []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML, runtime.ContentTypeProtobuf}
	patchTypes  = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"}
	streamTypes = []string{"*/*"}
)

// pathBuilder describes the REST operations of discovery resources, the
// way kube-apiserver's OpenAPI paths describe them.
type pathBuilder struct {
	scheme *runtime.Scheme
	// fieldValidation advertises the fieldValidation query parameter. kubectl
	// reads it as "the server validates fields": it then skips its own
	// schema validation and sends fieldValidation=Strict instead.
	fieldValidation bool
}

// container describes every resource of one group-version.
func (b pathBuilder) container(gv schema.GroupVersion, resources []discovery.Resource) (container, error) {
	c := container{root: rootPath(gv)}
	for _, r := range resources {
		routes, err := b.routes(r)
		if err != nil {
			return container{}, err
		}
		c.routes = append(c.routes, routes...)
	}
	return c, nil
}

func rootPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// sample returns a zero object of a kind, whose Go type the builder turns
// into a schema reference.
func (b pathBuilder) sample(gvk schema.GroupVersionKind) (runtime.Object, error) {
	obj, err := b.scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("no generated schema for %s (add its package to generated/doc.go): %w", gvk, err)
	}
	return obj, nil
}

// resourceOps names the operations of one resource.
type resourceOps struct {
	r          discovery.Resource
	collection string // path of the collection
	item       string // path of one object
	scope      string // "Namespaced" or ""
	gvName     string // "CoreV1"
	tag        string // "core_v1"
}

func (b pathBuilder) routes(r discovery.Resource) ([]route, error) {
	ops := newResourceOps(r)
	obj, err := b.sample(r.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	var routes []route
	add := func(rt route) { routes = append(routes, rt) }
	gvk := r.GroupVersionKind()
	for _, verb := range r.Verbs {
		switch verb {
		case "list":
			list, err := b.sample(r.GroupVersion().WithKind(r.Kind + "List"))
			if err != nil {
				return nil, err
			}
			add(ops.route(gvk, "GET", ops.collection, "list", "list", ops.scope+r.Kind, nil, list, listParams(), objectTypes))
			if r.Namespaced {
				add(ops.route(gvk, "GET", rootPath(r.GroupVersion())+"/"+r.Resource, "list", "list", r.Kind+"ForAllNamespaces", nil, list, listParams(), objectTypes))
			}
		case "create":
			add(ops.route(gvk, "POST", ops.collection, "create", "post", ops.scope+r.Kind, obj, obj, b.writeParams(), objectTypes))
		case "deletecollection":
			add(ops.route(gvk, "DELETE", ops.collection, "delete", "deletecollection", "Collection"+ops.scope+r.Kind,
				&metav1.DeleteOptions{}, &metav1.Status{}, append(listParams(), deleteParams()...), objectTypes))
		case "get":
			add(ops.route(gvk, "GET", ops.item, "read", "get", ops.scope+r.Kind, nil, obj, nil, objectTypes))
		case "update":
			add(ops.route(gvk, "PUT", ops.item, "replace", "put", ops.scope+r.Kind, obj, obj, b.writeParams(), objectTypes))
		case "patch":
			add(ops.route(gvk, "PATCH", ops.item, "patch", "patch", ops.scope+r.Kind, &metav1.Patch{}, obj, b.patchParams(), patchTypes))
		case "delete":
			add(ops.route(gvk, "DELETE", ops.item, "delete", "delete", ops.scope+r.Kind, &metav1.DeleteOptions{}, obj, deleteParams(), objectTypes))
		case "watch":
			// Watches are list requests with ?watch=true (a list parameter);
			// the deprecated /watch/ paths are not served.
		default:
			return nil, fmt.Errorf("%s: no OpenAPI operation for verb %q", r.GroupVersionResource(), verb)
		}
	}
	for _, s := range r.Subresources {
		sub, err := b.subresourceRoutes(ops, s)
		if err != nil {
			return nil, err
		}
		routes = append(routes, sub...)
	}
	for i := range routes {
		routes[i].params = append(ops.pathParams(routes[i].path), routes[i].params...)
	}
	return routes, nil
}

func (b pathBuilder) subresourceRoutes(ops resourceOps, s discovery.Subresource) ([]route, error) {
	gvk := s.GroupVersionKind(ops.r)
	path := ops.item + "/" + s.Name
	suffix := ops.scope + ops.r.Kind + exported(s.Name)
	var routes []route
	if s.Connect {
		// Streams carry bytes, described as a string, not an object.
		for _, verb := range s.Verbs {
			method, ok := map[string]string{"get": "GET", "create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE"}[verb]
			if !ok {
				return nil, fmt.Errorf("%s/%s: connect subresources take get, create, update, patch and delete, not %q", ops.r.Resource, s.Name, verb)
			}
			name := exported(strings.ToLower(method)) + suffix // connectCoreV1GetNamespacedPodExec
			routes = append(routes, ops.route(gvk, method, path, "connect", "connect", name, nil, "", nil, streamTypes))
		}
		return routes, nil
	}
	obj, err := b.sample(gvk)
	if err != nil {
		return nil, err
	}
	for _, verb := range s.Verbs {
		switch verb {
		case "get":
			routes = append(routes, ops.route(gvk, "GET", path, "read", "get", suffix, nil, obj, nil, objectTypes))
		case "update":
			routes = append(routes, ops.route(gvk, "PUT", path, "replace", "put", suffix, obj, obj, b.writeParams(), objectTypes))
		case "patch":
			routes = append(routes, ops.route(gvk, "PATCH", path, "patch", "patch", suffix, &metav1.Patch{}, obj, b.patchParams(), patchTypes))
		case "create":
			routes = append(routes, ops.route(gvk, "POST", path, "create", "post", suffix, obj, obj, b.writeParams(), objectTypes))
		default:
			return nil, fmt.Errorf("%s/%s: no OpenAPI operation for verb %q", ops.r.Resource, s.Name, verb)
		}
	}
	return routes, nil
}

func newResourceOps(r discovery.Resource) resourceOps {
	ops := resourceOps{r: r, gvName: gvName(r.GroupVersion()), tag: gvTag(r.GroupVersion())}
	root := rootPath(r.GroupVersion())
	if r.Namespaced {
		ops.scope = "Namespaced"
		ops.collection = root + "/namespaces/{namespace}/" + r.Resource
	} else {
		ops.collection = root + "/" + r.Resource
	}
	ops.item = ops.collection + "/{name}"
	return ops
}

// route describes one operation. opVerb and name form the operation ID as
// upstream spells it (readCoreV1NamespacedPod); action is x-kubernetes-action.
func (ops resourceOps) route(gvk schema.GroupVersionKind, method, path, opVerb, action, name string, body, response any, params []param, consumes []string) route {
	rt := route{
		method: method, path: path,
		operationID: opVerb + ops.gvName + name,
		description: fmt.Sprintf("%s %s", action, gvk.Kind),
		tags:        []string{ops.tag},
		consumes:    consumes,
		produces:    objectTypes,
		metadata: map[string]any{
			"x-kubernetes-action": action,
			gvkExtension:          map[string]string{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind},
		},
		request:  body,
		response: response,
		params:   append([]param{{name: "pretty", description: "If 'true', the output is indented.", dataType: "string", kind: common.QueryParameterKind}}, params...),
	}
	if response == "" {
		rt.produces = streamTypes
	}
	if body != nil {
		rt.params = append(rt.params, param{name: "body", dataType: "object", kind: common.BodyParameterKind, required: true})
	}
	return rt
}

// pathParams are the {namespace} and {name} parameters a path uses.
func (ops resourceOps) pathParams(path string) []param {
	var out []param
	for _, name := range []string{"name", "namespace"} {
		if strings.Contains(path, "{"+name+"}") {
			out = append(out, param{name: name, description: name + " of the object", dataType: "string", kind: common.PathParameterKind, required: true})
		}
	}
	return out
}

func query(name, dataType, description string) param {
	return param{name: name, dataType: dataType, description: description, kind: common.QueryParameterKind}
}

func listParams() []param {
	return []param{
		query("labelSelector", "string", "A selector to restrict the list of returned objects by their labels."),
		query("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields."),
		query("limit", "integer", "Maximum number of responses to return for a list call."),
		query("continue", "string", "The continue option from a previous paginated list."),
		query("resourceVersion", "string", "Constrains which resource versions the request may be served from."),
		query("resourceVersionMatch", "string", "How resourceVersion is applied to list calls."),
		query("watch", "boolean", "Watch for changes to the described resources."),
		query("allowWatchBookmarks", "boolean", "Requests watch events of type BOOKMARK."),
		query("sendInitialEvents", "boolean", "Starts a watch with synthetic ADDED events for the current state."),
		query("timeoutSeconds", "integer", "Timeout for the list/watch call."),
	}
}

func (b pathBuilder) writeParams() []param {
	params := []param{
		query("dryRun", "string", "When present, modifications are not persisted. Valid value: All."),
		query("fieldManager", "string", "Name of the actor making these changes."),
	}
	if b.fieldValidation {
		params = append(params, query("fieldValidation", "string", "Ignore, Warn or Strict handling of unknown or duplicate fields."))
	}
	return params
}

func (b pathBuilder) patchParams() []param {
	return append(b.writeParams(), query("force", "boolean", "Force an apply patch to take conflicting fields."))
}

func deleteParams() []param {
	return []param{
		query("dryRun", "string", "When present, modifications are not persisted. Valid value: All."),
		query("gracePeriodSeconds", "integer", "Seconds before the object should be deleted."),
		query("propagationPolicy", "string", "Whether and how garbage collection is performed: Orphan, Background or Foreground."),
	}
}

// gvName spells a group-version the way upstream operation IDs do:
// "" v1 -> CoreV1, rbac.authorization.k8s.io v1 -> RbacAuthorizationV1.
func gvName(gv schema.GroupVersion) string {
	group := strings.TrimSuffix(gv.Group, ".k8s.io")
	if group == "" {
		group = "core"
	}
	var b strings.Builder
	for _, part := range strings.Split(group, ".") {
		b.WriteString(exported(part))
	}
	return b.String() + exported(gv.Version)
}

// gvTag is the operation tag upstream uses: core_v1, events_v1.
func gvTag(gv schema.GroupVersion) string {
	group := strings.TrimSuffix(gv.Group, ".k8s.io")
	if group == "" {
		group = "core"
	}
	return strings.ReplaceAll(group, ".", "_") + "_" + gv.Version
}

func exported(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
