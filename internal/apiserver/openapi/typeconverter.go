package openapi

import (
	"fmt"
	"sort"

	"github.com/berth/berth/internal/apiserver/openapi/generated"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// TypeConverter returns the structured-merge-diff type converter of every
// generated definition, as kube-apiserver builds its own for server-side
// apply: with it, managed fields and apply merges follow the schemas'
// list-map keys (containers by name, ports by port and protocol) instead
// of treating every list as one atomic value as a deduced converter does.
func TypeConverter() (managedfields.TypeConverter, error) {
	namer := newDefinitionNamer(clientgoscheme.Scheme)
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
	return converter, nil
}
