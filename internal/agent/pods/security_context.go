package pods

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/pkg/security/apparmor"
	"k8s.io/kubernetes/pkg/securitycontext"
)

// containerSecurity is the CRI security context of c, as the kubelet's
// determineEffectiveSecurityContext builds it: the pod's context with the
// container's on top, the seccomp and AppArmor profiles, the image's user
// when none is asked for, the pod's groups and the /proc masks.
func (m *Manager) containerSecurity(pod *corev1.Pod, c *corev1.Container, imageUID *int64, imageUsername string) (*runtimeapi.LinuxContainerSecurityContext, error) {
	effective := securitycontext.DetermineEffectiveSecurityContext(pod, c)
	sc := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: namespaceOptions(pod),
		Capabilities:     runtimeCapabilities(effective.Capabilities),
		SelinuxOptions:   runtimeSELinux(effective.SELinuxOptions),
		NoNewPrivs:       securitycontext.AddNoNewPrivileges(effective),
		MaskedPaths:      securitycontext.ConvertToRuntimeMaskedPaths(effective.ProcMount),
		ReadonlyPaths:    securitycontext.ConvertToRuntimeReadonlyPaths(effective.ProcMount),
	}
	if effective.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *effective.RunAsUser}
	}
	if effective.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *effective.RunAsGroup}
	}
	if effective.Privileged != nil {
		sc.Privileged = *effective.Privileged
	}
	if effective.ReadOnlyRootFilesystem != nil {
		sc.ReadonlyRootfs = *effective.ReadOnlyRootFilesystem
	}
	var err error
	if sc.Seccomp, err = m.seccompProfile(pod.Spec.SecurityContext, c.SecurityContext); err != nil {
		return nil, configError{err}
	}
	//lint:ignore SA1019 the kubelet still sends the deprecated name for runtimes that read only it.
	if sc.Apparmor, sc.ApparmorProfile, err = appArmorProfile(pod, c); err != nil {
		return nil, configError{err}
	}
	if sc.RunAsUser == nil {
		if imageUID != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *imageUID}
		}
		sc.RunAsUsername = imageUsername
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
		if sc.SupplementalGroupsPolicy, err = supplementalGroupsPolicy(psc); err != nil {
			return nil, configError{err}
		}
	}
	return sc, nil
}

func supplementalGroupsPolicy(psc *corev1.PodSecurityContext) (runtimeapi.SupplementalGroupsPolicy, error) {
	if psc.SupplementalGroupsPolicy == nil {
		return runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*psc.SupplementalGroupsPolicy)]
	if !ok {
		return 0, fmt.Errorf("unsupported supplementalGroupsPolicy: %s", *psc.SupplementalGroupsPolicy)
	}
	return runtimeapi.SupplementalGroupsPolicy(v), nil
}

func runtimeCapabilities(caps *corev1.Capabilities) *runtimeapi.Capability {
	if caps == nil {
		return nil
	}
	out := &runtimeapi.Capability{AddCapabilities: make([]string, len(caps.Add)), DropCapabilities: make([]string, len(caps.Drop))}
	for i, c := range caps.Add {
		out.AddCapabilities[i] = string(c)
	}
	for i, c := range caps.Drop {
		out.DropCapabilities[i] = string(c)
	}
	return out
}

func runtimeSELinux(o *corev1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// imageUser is the user the image runs as, from the runtime's ImageStatus,
// as the kubelet's getImageUser: a uid, else a user name, else root.
func (m *Manager) imageUser(ctx context.Context, image string) (*int64, string, error) {
	resp, err := m.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		return nil, "", fmt.Errorf("image status %s: %w", image, err)
	}
	if img := resp.GetImage(); img != nil {
		if img.Uid != nil {
			uid := img.Uid.Value
			return &uid, "", nil
		}
		if img.Username != "" {
			return nil, img.Username, nil
		}
	}
	return new(int64), "", nil
}

// verifyRunAsNonRoot refuses a container with runAsNonRoot that would run
// as root, or whose user cannot be told from its image, with the kubelet's
// messages (pkg/kubelet/kuberuntime/security_context_others.go).
func verifyRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, uid *int64, username string) error {
	effective := securitycontext.DetermineEffectiveSecurityContext(pod, c)
	if effective.RunAsNonRoot == nil || !*effective.RunAsNonRoot {
		return nil
	}
	if effective.RunAsUser != nil {
		if *effective.RunAsUser == 0 {
			return configError{fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podDesc(pod), c.Name)}
		}
		return nil
	}
	switch {
	case uid == nil && username != "":
		return configError{fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", username, podDesc(pod), c.Name)}
	case uid != nil && *uid == 0:
		return configError{fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podDesc(pod), c.Name)}
	case uid != nil:
		if errs := validation.IsValidUserID(*uid); len(errs) > 0 {
			return configError{fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): %s (pod: %q, container: %s)",
				*uid, math.MaxInt32, strings.Join(errs, "; "), podDesc(pod), c.Name)}
		}
	}
	return nil
}

// podDesc names a pod in messages as the kubelet's format.Pod does.
func podDesc(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// seccompProfile is the container's seccomp profile: the container's field,
// else the pod's, else RuntimeDefault with --seccomp-default or Unconfined,
// as the kubelet's getSeccompProfile.
func (m *Manager) seccompProfile(psc *corev1.PodSecurityContext, csc *corev1.SecurityContext) (*runtimeapi.SecurityProfile, error) {
	switch {
	case csc != nil && csc.SeccompProfile != nil:
		return m.fieldSeccompProfile(csc.SeccompProfile)
	case psc != nil && psc.SeccompProfile != nil:
		return m.fieldSeccompProfile(psc.SeccompProfile)
	case m.cfg.SeccompDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	default:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
}

func (m *Manager) fieldSeccompProfile(p *corev1.SeccompProfile) (*runtimeapi.SecurityProfile, error) {
	switch p.Type {
	case corev1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			//lint:ignore ST1005 the kubelet's message, word for word.
			return nil, errors.New("localhostProfile must be set if seccompProfile type is Localhost.")
		}
		return m.localhostSeccomp(*p.LocalhostProfile)
	default:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
}

// localhostSeccomp joins a Localhost profile under the agent's seccomp
// profile root, as the kubelet joins it under <root-dir>/seccomp. The API
// already refuses ".." in the name; a path that still resolves outside the
// root is refused here too, so no pod names an arbitrary host file.
func (m *Manager) localhostSeccomp(name string) (*runtimeapi.SecurityProfile, error) {
	root := m.seccompRoot()
	path := filepath.Join(root, name)
	if rel, err := filepath.Rel(root, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, fmt.Errorf("seccomp localhostProfile %q is outside the node's seccomp profile root %s", name, root)
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: path}, nil
}

// seccompRoot is where Localhost seccomp profiles live on this node.
func (m *Manager) seccompRoot() string {
	if m.cfg.SeccompProfileRoot != "" {
		return filepath.Clean(m.cfg.SeccompProfileRoot)
	}
	return filepath.Join(m.cfg.DataDir, "seccomp")
}

// appArmorProfile is the container's AppArmor profile in both CRI forms
// (the field and the deprecated name), as the kubelet's getAppArmorProfile,
// from the container's field, the deprecated pod annotation, or the pod's
// field (apparmor.GetProfile).
func appArmorProfile(pod *corev1.Pod, c *corev1.Container) (*runtimeapi.SecurityProfile, string, error) {
	p := apparmor.GetProfile(pod, c)
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case corev1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, corev1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case corev1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, corev1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case corev1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, "", errors.New("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			corev1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	default:
		return nil, "", fmt.Errorf("unknown apparmor profile type: %q", p.Type)
	}
}
