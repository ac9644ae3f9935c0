package apiextensions

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	listers "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apiextensionsfeatures "k8s.io/apiextensions-apiserver/pkg/features"
	"k8s.io/apimachinery/pkg/labels"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// OpenAPISpecs are the CRDs' OpenAPI documents, built as upstream's CRD
// OpenAPI controllers build them (apiextensions' openapi builder) for each
// served version of each Established CRD, when a document is asked for
// after a change. berth's openapi handler merges them into its own
// (internal/apiserver/openapi.Extensions).
type OpenAPISpecs struct {
	crds       listers.CustomResourceDefinitionLister
	generation atomic.Uint64

	mu    sync.Mutex
	built uint64 // the generation v2 and v3 were built for
	v2    []*spec.Swagger
	v3    map[string]*spec3.OpenAPI
	err   error
}

func newOpenAPISpecs(informer cache.SharedIndexInformer, crds listers.CustomResourceDefinitionLister) (*OpenAPISpecs, error) {
	o := &OpenAPISpecs{crds: crds}
	o.generation.Store(1)
	changed := func(any) { o.generation.Add(1) }
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: changed, DeleteFunc: changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("apiextensions: watching CRDs for OpenAPI: %w", err)
	}
	return o, nil
}

// Generation changes whenever a CRD does.
func (o *OpenAPISpecs) Generation() uint64 { return o.generation.Load() }

// MergeV2 returns static with the CRDs' v2 paths and definitions merged in.
func (o *OpenAPISpecs) MergeV2(static *spec.Swagger) (*spec.Swagger, error) {
	v2, _, err := o.specs()
	if err != nil {
		return nil, err
	}
	return builder.MergeSpecs(static, v2...)
}

// V3 returns the CRDs' v3 documents by key ("apis/G/V").
func (o *OpenAPISpecs) V3() (map[string]*spec3.OpenAPI, error) {
	_, v3, err := o.specs()
	return v3, err
}

// specs returns the documents of the CRDs as they are now, rebuilt when
// any CRD changed since they were last built.
func (o *OpenAPISpecs) specs() ([]*spec.Swagger, map[string]*spec3.OpenAPI, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	gen := o.generation.Load()
	if gen != o.built {
		o.v2, o.v3, o.err = o.build()
		o.built = gen
	}
	return o.v2, o.v3, o.err
}

func (o *OpenAPISpecs) build() ([]*spec.Swagger, map[string]*spec3.OpenAPI, error) {
	crds, err := o.crds.List(labels.Everything())
	if err != nil {
		return nil, nil, fmt.Errorf("listing CRDs: %w", err)
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	opts := builder.Options{IncludeSelectableFields: utilfeature.DefaultFeatureGate.Enabled(apiextensionsfeatures.CustomResourceFieldSelectors)}
	var v2 []*spec.Swagger
	byGV := map[string][]*spec3.OpenAPI{}
	for _, crd := range crds {
		if !apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			v2Opts := opts
			v2Opts.V2 = true
			s, err := builder.BuildOpenAPIV2(crd, v.Name, v2Opts)
			if err != nil {
				return nil, nil, fmt.Errorf("OpenAPI v2 of %s %s: %w", crd.Name, v.Name, err)
			}
			// Defaults are pruned so that they merge with the built-in
			// document, whose defaults are pruned too (as upstream).
			s.Definitions = handler.PruneDefaults(s.Definitions)
			v2 = append(v2, s)
			s3, err := builder.BuildOpenAPIV3(crd, v.Name, opts)
			if err != nil {
				return nil, nil, fmt.Errorf("OpenAPI v3 of %s %s: %w", crd.Name, v.Name, err)
			}
			key := strings.Join([]string{"apis", crd.Spec.Group, v.Name}, "/")
			byGV[key] = append(byGV[key], s3)
		}
	}
	v3 := make(map[string]*spec3.OpenAPI, len(byGV))
	for key, docs := range byGV {
		merged, err := builder.MergeSpecsV3(docs...)
		if err != nil {
			return nil, nil, fmt.Errorf("OpenAPI v3 of %s: %w", key, err)
		}
		v3[key] = merged
	}
	return v2, v3, nil
}
