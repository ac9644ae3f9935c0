package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxDataSize caps ConfigMap and Secret payloads as upstream (1 MiB).
const maxDataSize = 1 << 20

func configMapRules() kindRules {
	return kindRules{
		validate: func(obj runtime.Object) field.ErrorList {
			cm := obj.(*corev1.ConfigMap)
			return validateDataKeys(keysOf(cm.Data), keysOf(cm.BinaryData), dataSize(cm.Data, cm.BinaryData), field.NewPath("data"))
		},
		validateUpdate: func(obj, old runtime.Object) field.ErrorList {
			cm, oldCM := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
			return validateImmutableData(oldCM.Immutable, cm.Immutable,
				[2]any{cm.Data, oldCM.Data}, [2]any{cm.BinaryData, oldCM.BinaryData})
		},
	}
}

func secretRules() kindRules {
	return kindRules{
		defaults: func(obj runtime.Object) {
			if s := obj.(*corev1.Secret); s.Type == "" {
				s.Type = corev1.SecretTypeOpaque
			}
		},
		prepareForCreate: func(_ context.Context, obj runtime.Object) {
			// stringData is write-only: merged into data, never stored.
			s := obj.(*corev1.Secret)
			for k, v := range s.StringData {
				if s.Data == nil {
					s.Data = map[string][]byte{}
				}
				s.Data[k] = []byte(v)
			}
			s.StringData = nil
		},
		validate: func(obj runtime.Object) field.ErrorList {
			s := obj.(*corev1.Secret)
			return validateDataKeys(nil, keysOf(s.Data), dataSize(nil, s.Data), field.NewPath("data"))
		},
		validateUpdate: func(obj, old runtime.Object) field.ErrorList {
			s, oldS := obj.(*corev1.Secret), old.(*corev1.Secret)
			errs := apivalidation.ValidateImmutableField(s.Type, oldS.Type, field.NewPath("type"))
			return append(errs, validateImmutableData(oldS.Immutable, s.Immutable, [2]any{s.Data, oldS.Data})...)
		},
		fields: func(obj runtime.Object) fields.Set {
			s := obj.(*corev1.Secret)
			return fields.Set{"metadata.name": s.Name, "metadata.namespace": s.Namespace, "type": string(s.Type)}
		},
	}
}

func keysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func dataSize(data map[string]string, binary map[string][]byte) int {
	n := 0
	for k, v := range data {
		n += len(k) + len(v)
	}
	for k, v := range binary {
		n += len(k) + len(v)
	}
	return n
}

func validateDataKeys(keys, binaryKeys []string, size int, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range append(keys, binaryKeys...) {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(path.Key(k), k, msg))
		}
	}
	if size > maxDataSize {
		errs = append(errs, field.TooLong(path, "", maxDataSize))
	}
	return errs
}

// validateImmutableData enforces the `immutable: true` contract of
// ConfigMaps and Secrets: once set it stays, and the data cannot change.
func validateImmutableData(oldImmutable, newImmutable *bool, pairs ...[2]any) field.ErrorList {
	if oldImmutable == nil || !*oldImmutable {
		return nil
	}
	var errs field.ErrorList
	if newImmutable == nil || !*newImmutable {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
	}
	for _, p := range pairs {
		errs = append(errs, apivalidation.ValidateImmutableField(p[0], p[1], field.NewPath("data"))...)
	}
	return errs
}

func coreEventRules() kindRules {
	return kindRules{
		allowCreateOnUpdate: true,
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
