package apiserver

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	// The flowcontrol group's internal types, defaults and conversions in
	// the legacy scheme, which its registry strategies use.
	flowcontrolapi "k8s.io/kubernetes/pkg/apis/flowcontrol"
	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	"k8s.io/kubernetes/pkg/registry/flowcontrol/flowschema"
	"k8s.io/kubernetes/pkg/registry/flowcontrol/prioritylevelconfiguration"
)

// flowControlResources is flowcontrol.apiserver.k8s.io/v1: FlowSchemas and
// PriorityLevelConfigurations, defaulted and validated by upstream's
// registry strategies; the server keeps kube-apiserver's mandatory and
// suggested configuration (internal/server). berth stores them for the
// tools that read and write them; its own limits on concurrent requests do
// not follow them (docs/api-differences.md).
func flowControlResources() []*resource {
	flowcontrol := flowcontrolv1.SchemeGroupVersion
	return []*resource{
		{
			gvr: flowcontrol.WithResource("flowschemas"), kind: "FlowSchema", singular: "flowschema",
			newObj: newOf[flowcontrolv1.FlowSchema](), newList: newOf[flowcontrolv1.FlowSchemaList](),
			registry: &registryKind{strategy: flowschema.Strategy, newInternal: func() runtime.Object { return &flowcontrolapi.FlowSchema{} },
				subresources: map[string]upstreamStrategy{"status": flowschema.StatusStrategy}},
			subresources: []string{"status"},
		},
		{
			gvr: flowcontrol.WithResource("prioritylevelconfigurations"), kind: "PriorityLevelConfiguration", singular: "prioritylevelconfiguration",
			newObj: newOf[flowcontrolv1.PriorityLevelConfiguration](), newList: newOf[flowcontrolv1.PriorityLevelConfigurationList](),
			registry: &registryKind{strategy: prioritylevelconfiguration.Strategy, newInternal: func() runtime.Object { return &flowcontrolapi.PriorityLevelConfiguration{} },
				subresources: map[string]upstreamStrategy{"status": prioritylevelconfiguration.StatusStrategy}},
			subresources: []string{"status"},
		},
	}
}
