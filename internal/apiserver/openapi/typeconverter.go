package openapi

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/berth/berth/internal/apiserver/openapi/generated"
)

// TypeConverter returns the structured-merge-diff type converter of every
// generated definition, as kube-apiserver builds its own for server-side
// apply: with it, managed fields and apply merges follow the schemas'
// list-map keys (containers by name, ports by port and protocol) instead
// of treating every list as one atomic value as a deduced converter does.
func TypeConverter() (managedfields.TypeConverter, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	namer := newDefinitionNamer(scheme)
	definitions := generated.GetOpenAPIDefinitions(func(path string) spec.Ref { return spec.MustCreateRef(path) })
	names := make([]string, 0, len(definitions))
	for name := range definitions {
		names = append(names, name)
	}
	sort.Strings(names)
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{
		GetDefinitions:    generated.GetOpenAPIDefinitions,
		GetDefinitionName: namer.name,
	}, names...)
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI definitions for server-side apply: %w", err)
	}
	converter, err := managedfields.NewTypeConverter(schemas, false)
	if err != nil {
		return nil, fmt.Errorf("building the server-side apply type converter: %w", err)
	}
	types, err := schemaconv.ToSchemaFromOpenAPI(schemas, false)
	if err != nil {
		return nil, fmt.Errorf("building the server-side apply schemas: %w", err)
	}
	parser := &typed.Parser{Schema: smdschema.Schema{Types: types.Types}}
	out := typedObjects{TypeConverter: converter, types: map[schema.GroupVersionKind]typed.ParseableType{}}
	for name, gvks := range namer.kinds {
		if _, ok := schemas[name]; !ok {
			continue
		}
		for _, gvk := range gvks {
			out.types[gvk] = parser.Type(name)
		}
	}
	return out, nil
}

// typedObjects is the upstream converter, except that it turns typed Go
// objects into structured-merge-diff values without validating them
// against their schema first.
//
// That validation walks the whole object once more on every write (a
// third of managedFields' CPU on a pod create), and for berth's objects it
// cannot fail where the walk that follows would not: the schemas are
// generated from these very Go types, the field manager allows duplicate
// list items anyway (typed.AllowDuplicates), and a list item missing its
// key fails the comparison of old and new just as it fails validation.
// Unstructured objects (apply patches, last-applied annotations), whose
// shape the client chose, are still validated
// (TestTypedObjectsRecordTheSameManagedFields compares both on every
// served kind).
type typedObjects struct {
	managedfields.TypeConverter
	types map[schema.GroupVersionKind]typed.ParseableType
}

func (c typedObjects) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	t, ok := c.types[obj.GetObjectKind().GroupVersionKind()]
	if _, unstructured := obj.(runtime.Unstructured); unstructured || !ok {
		return c.TypeConverter.ObjectToTyped(obj, opts...)
	}
	v, err := value.NewValueReflect(obj)
	if err != nil {
		return nil, fmt.Errorf("%T as a structured-merge-diff value: %w", obj, err)
	}
	return typed.AsTypedUnvalidated(v, t.Schema, t.TypeRef), nil
}
