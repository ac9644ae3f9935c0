package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/event"
)

// secretRules give the field selectors secrets are read by; upstream's
// secret strategy does the rest.
func secretRules() kindRules {
	return kindRules{
		fields: func(obj runtime.Object) fields.Set {
			s := obj.(*corev1.Secret)
			return fields.Set{"metadata.name": s.Name, "metadata.namespace": s.Namespace, "type": string(s.Type)}
		},
	}
}

// coreEventRules give the field selectors core events are read by,
// upstream's own (event.ToSelectableFields: "source" falls back to the
// reporting controller); upstream's event strategy does the rest.
func coreEventRules() kindRules {
	return kindRules{
		fields: func(obj runtime.Object) fields.Set {
			in := &api.Event{}
			if err := legacyscheme.Scheme.Convert(obj, in, nil); err != nil {
				panic(err) // generated conversions of a registered pair do not fail
			}
			return event.ToSelectableFields(in)
		},
	}
}

func eventsV1Rules() kindRules {
	return kindRules{
		allowCreateOnUpdate: true,
		fields: func(obj runtime.Object) fields.Set {
			e := obj.(*eventsv1.Event)
			return fields.Set{
				"metadata.name": e.Name, "metadata.namespace": e.Namespace,
				"regarding.kind": e.Regarding.Kind, "regarding.namespace": e.Regarding.Namespace,
				"regarding.name": e.Regarding.Name, "regarding.uid": string(e.Regarding.UID),
				"regarding.apiVersion": e.Regarding.APIVersion, "regarding.resourceVersion": e.Regarding.ResourceVersion,
				"regarding.fieldPath": e.Regarding.FieldPath, "reason": e.Reason,
				"reportingController": e.ReportingController, "type": e.Type,
			}
		},
	}
}
