package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
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

// coreEventRules give the field selectors core events are read by;
// upstream's event strategy does the rest.
func coreEventRules() kindRules {
	return kindRules{
		fields: func(obj runtime.Object) fields.Set {
			e := obj.(*corev1.Event)
			return fields.Set{
				"metadata.name": e.Name, "metadata.namespace": e.Namespace,
				"involvedObject.kind": e.InvolvedObject.Kind, "involvedObject.namespace": e.InvolvedObject.Namespace,
				"involvedObject.name": e.InvolvedObject.Name, "involvedObject.uid": string(e.InvolvedObject.UID),
				"involvedObject.apiVersion": e.InvolvedObject.APIVersion, "involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
				"involvedObject.fieldPath": e.InvolvedObject.FieldPath, "reason": e.Reason,
				"reportingComponent": e.ReportingController, "source": e.Source.Component, "type": e.Type,
			}
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
