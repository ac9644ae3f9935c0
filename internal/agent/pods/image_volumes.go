package pods

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageVolumePull is one image volume's pull in a sync: the image the
// runtime mounts, or why it could not be made present.
type imageVolumePull struct {
	spec *runtimeapi.ImageSpec
	err  error
}

// imageVolumes makes present the images of the image volumes c mounts and
// returns their CRI image specs by volume name. As the kubelet's
// getImageVolumes, each volume's image is pulled (following its
// pullPolicy) once per sync, and a failure fails the start of every
// container mounting it with the image's waiting reason.
func (s *syncRun) imageVolumes(ctx context.Context, c *corev1.Container) (map[string]*runtimeapi.ImageSpec, error) {
	var out map[string]*runtimeapi.ImageSpec
	for _, vm := range c.VolumeMounts {
		src := imageVolumeSource(s.pod, vm.Name)
		if src == nil {
			continue
		}
		pull, ok := s.imagePulls[vm.Name]
		if !ok {
			ref, err := s.m.ensureImageRef(ctx, s.pod, src.Reference, src.PullPolicy, s.sbConfig)
			pull = imageVolumePull{err: err}
			if err == nil {
				pull.spec = &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: src.Reference, Annotations: s.pod.Annotations}
			}
			if s.imagePulls == nil {
				s.imagePulls = map[string]imageVolumePull{}
			}
			s.imagePulls[vm.Name] = pull
		}
		if pull.err != nil {
			return nil, pull.err
		}
		if out == nil {
			out = map[string]*runtimeapi.ImageSpec{}
		}
		out[vm.Name] = pull.spec
	}
	return out, nil
}

// imageVolumeSource is the image source of pod's volume name, nil when the
// volume is of another type.
func imageVolumeSource(pod *corev1.Pod, name string) *corev1.ImageVolumeSource {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return pod.Spec.Volumes[i].Image
		}
	}
	return nil
}
