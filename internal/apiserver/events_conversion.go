package apiserver

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// events.k8s.io/v1 Events are stored as core/v1 Events, as upstream does,
// so that `kubectl describe` (core/v1) sees what events/v1 recorders (the
// scheduler, the agent) write. The field mapping is upstream's
// (pkg/apis/events/v1/conversion.go), written by hand because that code
// converts through internal types berth does not have.

func eventToStorage(obj runtime.Object) (runtime.Object, error) {
	e, ok := obj.(*eventsv1.Event)
	if !ok {
		return nil, fmt.Errorf("not an events.k8s.io/v1 Event: %T", obj)
	}
	out := &corev1.Event{
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		Related:             e.Related,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out, nil
}

func eventFromStorage(obj runtime.Object) (runtime.Object, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return nil, fmt.Errorf("not a core/v1 Event: %T", obj)
	}
	out := &eventsv1.Event{
		ObjectMeta:               e.ObjectMeta,
		EventTime:                e.EventTime,
		ReportingController:      e.ReportingController,
		ReportingInstance:        e.ReportingInstance,
		Action:                   e.Action,
		Reason:                   e.Reason,
		Regarding:                e.InvolvedObject,
		Related:                  e.Related,
		Note:                     e.Message,
		Type:                     e.Type,
		DeprecatedSource:         e.Source,
		DeprecatedFirstTimestamp: e.FirstTimestamp,
		DeprecatedLastTimestamp:  e.LastTimestamp,
		DeprecatedCount:          e.Count,
	}
	if e.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out, nil
}
