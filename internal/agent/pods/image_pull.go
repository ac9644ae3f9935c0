package pods

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Upstream waiting reasons for images.
const (
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
	reasonErrImageNeverPull = "ErrImageNeverPull"
)

// imageError is an image that could not be made present; reason is the
// upstream waiting reason.
type imageError struct {
	image  string
	reason string
	err    error
}

// backOffPulling is upstream's message while an image pull backs off.
type backOffPulling string

func (b backOffPulling) Error() string { return fmt.Sprintf("Back-off pulling image %q", string(b)) }

func (e imageError) Error() string { return e.err.Error() }
func (e imageError) Unwrap() error { return e.err }

// ensureImage makes c's image present following its imagePullPolicy and
// returns the runtime's image reference. Failed pulls back off per image.
func (m *Manager) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	return m.ensureImageRef(ctx, pod, c.Image, c.ImagePullPolicy, sandbox)
}

// ensureImageRef makes image present following policy (a container's, or an
// image volume's) and returns the runtime's image reference, as the
// kubelet's image puller does for both.
func (m *Manager) ensureImageRef(ctx context.Context, pod *corev1.Pod, image string, policy corev1.PullPolicy, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	spec := &runtimeapi.ImageSpec{Image: image}
	if policy == "" {
		policy = corev1.PullIfNotPresent
	}
	if policy != corev1.PullAlways {
		st, err := m.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
		if err != nil {
			return "", fmt.Errorf("image status %s: %w", image, err)
		}
		if st.Image != nil {
			return st.Image.Id, nil
		}
		if policy == corev1.PullNever {
			return "", imageError{image, reasonErrImageNeverPull, fmt.Errorf("container image %q is not present with pull policy of Never", image)}
		}
	}
	key := imageBackoffKey(pod.UID, image)
	if _, _, waiting := m.backoff.Waiting(key); waiting {
		return "", imageError{image, reasonImagePullBackOff, backOffPulling(image)}
	}
	m.event(pod, corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", image))
	start := time.Now()
	ref, err := m.pull(ctx, pod, spec, sandbox)
	m.cfg.Metrics.pulled(time.Since(start), err)
	if err != nil {
		m.backoff.Next(key)
		m.event(pod, corev1.EventTypeWarning, "Failed", fmt.Sprintf("Failed to pull image %q: %v", image, err))
		return "", imageError{image, reasonErrImagePull, fmt.Errorf("failed to pull image %q: %w", image, err)}
	}
	m.backoff.Reset(key)
	m.event(pod, corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Successfully pulled image %q", image))
	return ref, nil
}

// pull tries each matching credential from the pod's imagePullSecrets, then
// an anonymous pull, as the kubelet does.
func (m *Manager) pull(ctx context.Context, pod *corev1.Pod, spec *runtimeapi.ImageSpec, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	auths, err := m.pullCredentials(ctx, pod, spec.Image)
	if err != nil {
		return "", err
	}
	var errs []error
	for _, auth := range append(auths, nil) {
		resp, err := m.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec, Auth: auth, SandboxConfig: sandbox})
		if err == nil {
			return resp.ImageRef, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

// dockerConfig is the content of a kubernetes.io/dockerconfigjson Secret.
type dockerConfig struct {
	Auths map[string]struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Auth     string `json:"auth"`
	} `json:"auths"`
}

func (m *Manager) pullCredentials(ctx context.Context, pod *corev1.Pod, image string) ([]*runtimeapi.AuthConfig, error) {
	host := registryHost(image)
	var out []*runtimeapi.AuthConfig
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, err := m.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			m.log.Warn("image pull secret unreadable; pulling without it", "pod", pod.Namespace+"/"+pod.Name, "secret", ref.Name, "err", err)
			continue
		}
		var cfg dockerConfig
		if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
			m.log.Warn("image pull secret is not a dockerconfigjson", "secret", ref.Name, "err", err)
			continue
		}
		for server, a := range cfg.Auths {
			if registryHost(strings.TrimPrefix(strings.TrimPrefix(server, "https://"), "http://")+"/x") != host {
				continue
			}
			user, pass := a.Username, a.Password
			if a.Auth != "" {
				if dec, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
					user, pass, _ = strings.Cut(string(dec), ":")
				}
			}
			out = append(out, &runtimeapi.AuthConfig{Username: user, Password: pass, ServerAddress: server})
		}
	}
	return out, nil
}

// registryHost returns the registry part of an image reference, with
// Docker's rules (docker.io when the first component is not a host).
func registryHost(image string) string {
	first, _, ok := strings.Cut(image, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first
	}
	return "docker.io"
}

// imageBackoffKey keys a pod's image pull back-off; it starts with the pod
// UID so the pod's keys are dropped together.
func imageBackoffKey(uid types.UID, image string) string {
	return string(uid) + "/image/" + image
}
