package openapi

import "k8s.io/kube-openapi/pkg/common"

// route, param and response are plain-data implementations of the route
// interfaces kube-openapi's builders read. berth has no go-restful
// WebServices to adapt: its routes are described from the discovery list.
type route struct {
	method, path, operationID, description string
	tags                                   []string
	params                                 []param
	consumes, produces                     []string
	metadata                               map[string]any
	request, response                      any // Go samples whose type names the schema
}

func (r route) Method() string                                   { return r.method }
func (r route) Path() string                                     { return r.path }
func (r route) OperationName() string                            { return r.operationID }
func (r route) Description() string                              { return r.description }
func (r route) Consumes() []string                               { return r.consumes }
func (r route) Produces() []string                               { return r.produces }
func (r route) Metadata() map[string]any                         { return r.metadata }
func (r route) RequestPayloadSample() any                        { return r.request }
func (r route) ResponsePayloadSample() any                       { return r.response }
func (r route) StatusCodeResponses() []common.StatusCodeResponse { return nil }
func (r route) Parameters() []common.Parameter {
	out := make([]common.Parameter, len(r.params))
	for i, p := range r.params {
		out[i] = p
	}
	return out
}

type param struct {
	name, description, dataType string
	kind                        common.ParameterKind
	required, multiple          bool
}

func (p param) Name() string               { return p.name }
func (p param) Description() string        { return p.description }
func (p param) Required() bool             { return p.required }
func (p param) Kind() common.ParameterKind { return p.kind }
func (p param) DataType() string           { return p.dataType }
func (p param) AllowMultiple() bool        { return p.multiple }

// container groups the routes of one group-version under its root path.
type container struct {
	root   string
	routes []route
}

func (c container) RootPath() string                   { return c.root }
func (c container) PathParameters() []common.Parameter { return nil }
func (c container) Routes() []common.Route {
	out := make([]common.Route, len(c.routes))
	for i, r := range c.routes {
		out[i] = r
	}
	return out
}

func operationIDAndTags(r common.Route) (string, []string, error) {
	var tags []string
	if ours, ok := r.(route); ok {
		tags = ours.tags
	}
	return r.OperationName(), tags, nil
}
