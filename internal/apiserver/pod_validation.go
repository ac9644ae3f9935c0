package apiserver

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Pod validation, by hand for the same reason as the defaults: upstream's
// lives in k8s.io/kubernetes. It covers what berth's agent relies on; each
// error carries its field path as kube-apiserver's do.

func validatePodSpec(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	volumes, volErrs := validateVolumes(spec.Volumes, path.Child("volumes"))
	errs = append(errs, volErrs...)
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "must have at least one container"))
	}
	names := sets.New[string]()
	errs = append(errs, validateContainers(spec.InitContainers, volumes, names, path.Child("initContainers"))...)
	errs = append(errs, validateContainers(spec.Containers, volumes, names, path.Child("containers"))...)
	errs = append(errs, validateEnum(string(spec.RestartPolicy), path.Child("restartPolicy"),
		corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)...)
	errs = append(errs, validateEnum(string(spec.DNSPolicy), path.Child("dnsPolicy"),
		corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet, corev1.DNSDefault, corev1.DNSNone)...)
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be >= 0"))
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, "must be > 0"))
	}
	if spec.NodeName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(spec.NodeName) {
			errs = append(errs, field.Invalid(path.Child("nodeName"), spec.NodeName, msg))
		}
	}
	errs = append(errs, validateSchedulingGates(spec, path)...)
	return append(errs, validatePodScheduling(spec, path)...)
}

// validateSchedulingGates checks the gates' names as upstream, and that a
// gated pod is not created bound: no scheduler may place it yet.
func validateSchedulingGates(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, gate := range spec.SchedulingGates {
		at := path.Child("schedulingGates").Index(i).Child("name")
		for _, msg := range validation.IsQualifiedName(gate.Name) {
			errs = append(errs, field.Invalid(at, gate.Name, msg))
		}
		if seen.Has(gate.Name) {
			errs = append(errs, field.Duplicate(at, gate.Name))
		}
		seen.Insert(gate.Name)
	}
	if spec.NodeName != "" && len(spec.SchedulingGates) > 0 {
		errs = append(errs, field.Forbidden(path.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return errs
}

func validateEnum[T ~string](value string, path *field.Path, allowed ...T) field.ErrorList {
	supported := make([]string, len(allowed))
	for i, a := range allowed {
		if string(a) == value {
			return nil
		}
		supported[i] = string(a)
	}
	return field.ErrorList{field.NotSupported(path, value, supported)}
}

func validateVolumes(volumes []corev1.Volume, path *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, v := range volumes {
		p := path.Index(i).Child("name")
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, field.Invalid(p, v.Name, msg))
		}
		if names.Has(v.Name) {
			errs = append(errs, field.Duplicate(p, v.Name))
		}
		names.Insert(v.Name)
	}
	return names, errs
}

func validateContainers(containers []corev1.Container, volumes, names sets.Set[string], path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range containers {
		c := &containers[i]
		p := path.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			if c.Name != "" {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names.Insert(c.Name)
		errs = append(errs, validateImage(c.Image, p.Child("image"))...)
		errs = append(errs, validatePorts(c.Ports, p.Child("ports"))...)
		errs = append(errs, validateResources(&c.Resources, p.Child("resources"))...)
		errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
		for j, m := range c.VolumeMounts {
			if !volumes.Has(m.Name) {
				errs = append(errs, field.NotFound(p.Child("volumeMounts").Index(j).Child("name"), m.Name))
			}
			if m.MountPath == "" {
				errs = append(errs, field.Required(p.Child("volumeMounts").Index(j).Child("mountPath"), ""))
			}
		}
		errs = append(errs, validateEnum(string(c.ImagePullPolicy), p.Child("imagePullPolicy"),
			corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
	}
	return errs
}

func validateImage(image string, path *field.Path) field.ErrorList {
	switch {
	case image == "":
		return field.ErrorList{field.Required(path, "")}
	case strings.TrimSpace(image) != image || strings.ContainsAny(image, " \t\n"):
		return field.ErrorList{field.Invalid(path, image, "must not contain whitespace")}
	}
	return nil
}

func validatePorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			for _, msg := range validation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
			}
			if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
			errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		errs = append(errs, validateEnum(string(port.Protocol), p.Child("protocol"),
			corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)...)
	}
	return errs
}

func validateResources(res *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateQuantities(res.Limits, path.Child("limits"))...)
	errs = append(errs, validateQuantities(res.Requests, path.Child("requests"))...)
	for name, req := range res.Requests {
		if lim, ok := res.Limits[name]; ok && req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		}
	}
	return errs
}

func validateQuantities(list corev1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, q := range list {
		if q.Cmp(apiresource.Quantity{}) < 0 {
			errs = append(errs, field.Invalid(path.Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
		for _, msg := range validation.IsQualifiedName(string(name)) {
			errs = append(errs, field.Invalid(path.Key(string(name)), name, msg))
		}
	}
	return errs
}

func validateEnv(env []corev1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		if e.Name == "" {
			errs = append(errs, field.Required(path.Index(i).Child("name"), ""))
		}
		if strings.Contains(e.Name, "=") {
			errs = append(errs, field.Invalid(path.Index(i).Child("name"), e.Name, "must not contain '='"))
		}
	}
	return errs
}

// validatePodSpecUpdate enforces upstream's pod immutability: only container
// images, a shorter activeDeadlineSeconds and added tolerations may change.
func validatePodSpecUpdate(spec, old *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a, b := spec.ActiveDeadlineSeconds, old.ActiveDeadlineSeconds; b != nil && (a == nil || *a > *b) {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), a, "must not be removed or increased"))
	}
	if !tolerationsOnlyAdded(spec.Tolerations, old.Tolerations) {
		errs = append(errs, field.Forbidden(path.Child("tolerations"), "existing tolerations may not be changed or removed"))
	}
	if len(spec.Containers) != len(old.Containers) || len(spec.InitContainers) != len(old.InitContainers) {
		return append(errs, field.Forbidden(path, podUpdateForbidden))
	}
	mutable := *spec.DeepCopy()
	for i := range mutable.Containers {
		mutable.Containers[i].Image = old.Containers[i].Image
	}
	for i := range mutable.InitContainers {
		mutable.InitContainers[i].Image = old.InitContainers[i].Image
	}
	mutable.ActiveDeadlineSeconds = old.ActiveDeadlineSeconds
	mutable.Tolerations = old.Tolerations
	// Scheduling gates may only be removed, which is how a pod is released
	// to the scheduler.
	oldGates := sets.New[string]()
	for _, g := range old.SchedulingGates {
		oldGates.Insert(g.Name)
	}
	for i, g := range spec.SchedulingGates {
		if !oldGates.Has(g.Name) {
			errs = append(errs, field.Forbidden(path.Child("schedulingGates").Index(i),
				fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	mutable.SchedulingGates = old.SchedulingGates
	if !apiequality.Semantic.DeepEqual(mutable, *old) {
		errs = append(errs, field.Forbidden(path, podUpdateForbidden))
	}
	return errs
}

const podUpdateForbidden = "pod updates may not change fields other than `spec.containers[*].image`, " +
	"`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations) " +
	"or `spec.schedulingGates` (only deletions)"

func tolerationsOnlyAdded(tolerations, old []corev1.Toleration) bool {
	for _, o := range old {
		found := false
		for _, t := range tolerations {
			if apiequality.Semantic.DeepEqual(o, t) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
