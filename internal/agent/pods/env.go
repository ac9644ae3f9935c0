package pods

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// configError is a problem in the pod's configuration the agent cannot run
// around (a missing ConfigMap key, ...): the container waits with reason
// CreateContainerConfigError until the pod or the referenced object changes.
type configError struct{ err error }

func (e configError) Error() string { return e.err.Error() }
func (e configError) Unwrap() error { return e.err }

// envFor resolves container c's environment as the kubelet does: envFrom
// first, then env, later entries overriding earlier ones, then the service
// variables the pod's own entries did not set.
func (m *Manager) envFor(ctx context.Context, pod *corev1.Pod, c *corev1.Container) ([]*runtimeapi.KeyValue, error) {
	services, err := m.services.forPod(pod.Namespace, ptr.Deref(pod.Spec.EnableServiceLinks, true))
	if err != nil {
		return nil, err
	}
	var order []string
	values := map[string]string{}
	set := func(k, v string) {
		if _, ok := values[k]; !ok {
			order = append(order, k)
		}
		values[k] = v
	}
	for _, from := range c.EnvFrom {
		data, err := m.envFromSource(ctx, pod.Namespace, from)
		if err != nil {
			return nil, err
		}
		for k, v := range data {
			set(from.Prefix+k, v)
		}
	}
	for _, e := range c.Env {
		v, ok, err := m.envValue(ctx, pod, c, e)
		if err != nil {
			return nil, configError{fmt.Errorf("env %s: %w", e.Name, err)}
		}
		if ok {
			if e.ValueFrom == nil {
				v = expand(v, values, services) // a literal value may use variables defined before it, and the services'
			}
			set(e.Name, v)
		}
	}
	serviceNames := make([]string, 0, len(services))
	for k := range services {
		if _, ok := values[k]; !ok {
			serviceNames = append(serviceNames, k)
		}
	}
	slices.Sort(serviceNames)
	for _, k := range serviceNames {
		set(k, services[k])
	}
	out := make([]*runtimeapi.KeyValue, 0, len(order))
	for _, k := range order {
		out = append(out, &runtimeapi.KeyValue{Key: k, Value: []byte(values[k])})
	}
	return out, nil
}

func (m *Manager) envFromSource(ctx context.Context, ns string, from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := m.client.CoreV1().ConfigMaps(ns).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
		if err != nil {
			if optional(from.ConfigMapRef.Optional) {
				return nil, nil
			}
			return nil, configError{fmt.Errorf("configmap %q: %w", from.ConfigMapRef.Name, err)}
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := m.client.CoreV1().Secrets(ns).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			if optional(from.SecretRef.Optional) {
				return nil, nil
			}
			return nil, configError{fmt.Errorf("secret %q: %w", from.SecretRef.Name, err)}
		}
		out := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			out[k] = string(v)
		}
		return out, nil
	}
	return nil, nil
}

func optional(b *bool) bool { return b != nil && *b }

// envValue returns the value of one env entry; ok is false when an optional
// reference is missing and the variable is left unset.
func (m *Manager) envValue(ctx context.Context, pod *corev1.Pod, c *corev1.Container, e corev1.EnvVar) (string, bool, error) {
	src := e.ValueFrom
	switch {
	case src == nil:
		return e.Value, true, nil
	case src.FieldRef != nil:
		v, err := m.fieldValue(pod, src.FieldRef.FieldPath)
		return v, err == nil, err
	case src.ResourceFieldRef != nil:
		v, err := m.containerResourceValue(ctx, pod, c, src.ResourceFieldRef)
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := m.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", false, missing(ref.Optional, fmt.Errorf("configmap %q: %w", ref.Name, err))
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			return "", false, missing(ref.Optional, fmt.Errorf("configmap %q has no key %q", ref.Name, ref.Key))
		}
		return v, true, nil
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := m.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", false, missing(ref.Optional, fmt.Errorf("secret %q: %w", ref.Name, err))
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return "", false, missing(ref.Optional, fmt.Errorf("secret %q has no key %q", ref.Name, ref.Key))
		}
		return string(v), true, nil
	}
	return "", false, fmt.Errorf("unsupported valueFrom")
}

func missing(opt *bool, err error) error {
	if optional(opt) {
		return nil
	}
	return err
}
