package tables

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func eventColumns() []metav1.TableColumnDefinition {
	doc := corev1.Event{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		column("Last Seen", doc["lastTimestamp"]),
		column("Type", doc["type"]),
		column("Reason", doc["reason"]),
		column("Object", doc["involvedObject"]),
		wideColumn("Subobject", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]),
		wideColumn("Source", doc["source"]),
		column("Message", doc["message"]),
		wideColumn("First Seen", doc["firstTimestamp"]),
		wideColumn("Count", doc["count"]),
		{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: objectMetaDocs["name"]},
	}
}

func eventPrinter() printer {
	return typed(eventColumns(), eventRow)
}

// eventsV1Printer prints events.k8s.io/v1 Events with the same columns, as
// kube-apiserver does: both are views of one stored event.
func eventsV1Printer() printer {
	return typed(eventColumns(), func(e *eventsv1.Event, now time.Time) metav1.TableRow {
		return eventRow(coreEvent(e), now)
	})
}

func eventRow(e *corev1.Event, now time.Time) metav1.TableRow {
	first := since(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = sinceMicro(e.EventTime, now)
	}
	last := first
	if !e.LastTimestamp.IsZero() {
		last = since(e.LastTimestamp, now)
	}
	count := e.Count
	switch {
	case e.Series != nil:
		last, count = sinceMicro(e.Series.LastObservedTime, now), e.Series.Count
	case count == 0:
		count = 1 // events.k8s.io singletons carry no count
	}
	object := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		object += "/" + e.InvolvedObject.Name
	}
	return cells(last, e.Type, e.Reason, object, e.InvolvedObject.FieldPath, eventSource(e), e.Message, first, int64(count), e.Name)
}

// eventSource names who reported an event: the legacy source, or the
// reporting controller of newer events.
func eventSource(e *corev1.Event) string {
	component, instance := e.Source.Component, e.Source.Host
	if component == "" {
		component, instance = e.ReportingController, e.ReportingInstance
	}
	if instance == "" {
		return component
	}
	return fmt.Sprintf("%s, %s", component, instance)
}

// coreEvent maps an events.k8s.io/v1 Event onto the core/v1 fields the
// printer reads.
func coreEvent(e *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Type:                e.Type,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		EventTime:           e.EventTime,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}
