package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePodScheduling checks what the scheduler parses: inter-pod
// affinity terms and topology spread constraints, as upstream validates
// them, so that a term the scheduler could not read is refused with its
// field path instead of leaving the pod pending.
func validatePodScheduling(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a := spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			p := path.Child("affinity", "podAffinity")
			errs = append(errs, validateAffinityTerms(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, p)...)
		}
		if a.PodAntiAffinity != nil {
			p := path.Child("affinity", "podAntiAffinity")
			errs = append(errs, validateAffinityTerms(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, p)...)
		}
	}
	for i := range spec.TopologySpreadConstraints {
		c := &spec.TopologySpreadConstraints[i]
		p := path.Child("topologySpreadConstraints").Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		errs = append(errs, validateTopologyKey(c.TopologyKey, p.Child("topologyKey"))...)
		errs = append(errs, validateEnum(string(c.WhenUnsatisfiable), p.Child("whenUnsatisfiable"), corev1.DoNotSchedule, corev1.ScheduleAnyway)...)
		if c.MinDomains != nil && (*c.MinDomains <= 0 || c.WhenUnsatisfiable != corev1.DoNotSchedule) {
			errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains, "must be greater than 0, and only with whenUnsatisfiable DoNotSchedule"))
		}
		errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	return errs
}

func validateAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range required {
		errs = append(errs, validateAffinityTerm(&required[i], path.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i := range preferred {
		p := path.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		if w := preferred[i].Weight; w < 1 || w > 100 {
			errs = append(errs, field.Invalid(p.Child("weight"), w, "must be in the range 1-100"))
		}
		errs = append(errs, validateAffinityTerm(&preferred[i].PodAffinityTerm, p.Child("podAffinityTerm"))...)
	}
	return errs
}

func validateAffinityTerm(t *corev1.PodAffinityTerm, path *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := metav1validation.ValidateLabelSelector(t.LabelSelector, opts, path.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, opts, path.Child("namespaceSelector"))...)
	for i, ns := range t.Namespaces {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(path.Child("namespaces").Index(i), ns, msg))
		}
	}
	return append(errs, validateTopologyKey(t.TopologyKey, path.Child("topologyKey"))...)
}

func validateTopologyKey(key string, path *field.Path) field.ErrorList {
	if key == "" {
		return field.ErrorList{field.Required(path, "can not be empty")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(key) {
		errs = append(errs, field.Invalid(path, key, msg))
	}
	return errs
}
