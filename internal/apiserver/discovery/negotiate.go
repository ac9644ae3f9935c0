package discovery

import (
	"github.com/munnerz/goautoneg"
	"k8s.io/apimachinery/pkg/runtime"
)

// encoding is a wire format discovery can answer in.
type encoding int

const (
	encodingJSON encoding = iota
	encodingProtobuf
)

// representation is what a request gets: which document and how encoded.
type representation struct {
	aggregated bool
	encoding   encoding
}

const aggregatedParams = ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// contentType is the Content-Type header of a representation, which
// client-go inspects to tell aggregated from legacy discovery.
func (r representation) contentType() string {
	base := runtime.ContentTypeJSON
	if r.encoding == encodingProtobuf {
		base = runtime.ContentTypeProtobuf
	}
	if r.aggregated {
		return base + aggregatedParams
	}
	return base
}

// negotiate picks the client's most preferred representation that berth
// serves. aggregatedAllowed is false for paths that have no aggregated form.
// The second result is false when nothing acceptable is served (406).
func negotiate(accept string, aggregatedAllowed bool) (representation, bool) {
	if accept == "" {
		return representation{encoding: encodingJSON}, true
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		if clause.Q <= 0 {
			continue
		}
		enc, ok := encodingOf(clause)
		if !ok {
			continue
		}
		if !asksForKind(clause) {
			return representation{encoding: enc}, true
		}
		// A request for a specific kind is honoured only for the kind
		// served; anything else (v2beta1, Table) falls to the next clause.
		if aggregatedAllowed && clause.Params["g"] == "apidiscovery.k8s.io" &&
			clause.Params["v"] == "v2" && clause.Params["as"] == "APIGroupDiscoveryList" {
			return representation{aggregated: true, encoding: enc}, true
		}
	}
	return representation{}, false
}

func encodingOf(clause goautoneg.Accept) (encoding, bool) {
	switch {
	case clause.Type == "application" && clause.SubType == "json":
		return encodingJSON, true
	case clause.Type == "application" && clause.SubType == "vnd.kubernetes.protobuf":
		return encodingProtobuf, true
	case (clause.Type == "*" || clause.Type == "application") && clause.SubType == "*" && !asksForKind(clause):
		return encodingJSON, true
	}
	return 0, false
}

func asksForKind(clause goautoneg.Accept) bool {
	_, g := clause.Params["g"]
	_, v := clause.Params["v"]
	_, as := clause.Params["as"]
	return g || v || as
}
