package pods

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/configmap"
	"k8s.io/kubernetes/pkg/volume/downwardapi"
	"k8s.io/kubernetes/pkg/volume/secret"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

// A content volume's files (path -> data, mode, owner) are built by the
// kubelet's own volume plugins' payload functions, so that which keys land
// where, with which mode (an item's mode over the volume's defaultMode) and
// what a missing key or source means are upstream's rules, not a copy.

// payload is the files of one content volume, as upstream's volume plugins
// hand them to the AtomicWriter.
type payload = map[string]volumeutil.FileProjection

// modeOr is a volume's defaultMode, or the API's default for it when the
// pod reached the agent without defaulting (upstream's payload functions
// refuse a nil one).
func modeOr(mode *int32, def int32) *int32 {
	if mode != nil {
		return mode
	}
	return &def
}

// configMapPayload is the configMap volume plugin's payload.
func (m *Manager) configMapPayload(ctx context.Context, ns, name string, items []corev1.KeyToPath, defaultMode *int32, defaultUser *int64, opt *bool) (payload, error) {
	absent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return optionalSourcePayload(ctx, "configmap", name, opt, m.client.CoreV1().ConfigMaps(ns).Get, absent,
		func(cm *corev1.ConfigMap, optional bool) (payload, error) {
			return configmap.MakePayload(items, cm, defaultMode, defaultUser, optional)
		})
}

// secretPayload is the secret volume plugin's payload.
func (m *Manager) secretPayload(ctx context.Context, ns, name string, items []corev1.KeyToPath, defaultMode *int32, defaultUser *int64, opt *bool) (payload, error) {
	absent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return optionalSourcePayload(ctx, "secret", name, opt, m.client.CoreV1().Secrets(ns).Get, absent,
		func(s *corev1.Secret, optional bool) (payload, error) {
			return secret.MakePayload(items, s, defaultMode, defaultUser, optional)
		})
}

// optionalSourcePayload reads a volume's source object and builds its
// payload with upstream's function: a source that does not exist is the
// empty absent object when the volume is optional; any other failure to
// read it is an error.
func optionalSourcePayload[T any](ctx context.Context, what, name string, opt *bool,
	get func(context.Context, string, metav1.GetOptions) (T, error), absent T,
	makePayload func(T, bool) (payload, error)) (payload, error) {
	obj, err := get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) || !optional(opt) {
			return nil, fmt.Errorf("%s %q: %w", what, name, err)
		}
		obj = absent
	}
	p, err := makePayload(obj, optional(opt))
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", what, name, err)
	}
	return p, nil
}

// downwardPayload is the downwardAPI volume plugin's payload. Upstream's
// CollectData asks its volume host only for the node's allocatable (the
// limit of a container without one); allocatableHost answers that.
func (m *Manager) downwardPayload(ctx context.Context, pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32, defaultUser *int64) (payload, error) {
	p, err := downwardapi.CollectData(items, pod, &allocatableHost{ctx: ctx, m: m}, defaultMode, defaultUser)
	if err != nil {
		return nil, fmt.Errorf("downward API files: %w", err)
	}
	return p, nil
}

// allocatableHost is the one method of a kubelet volume host that
// downwardapi.CollectData calls. The embedded interface stays nil: any
// other method would panic, which CollectData never calls.
type allocatableHost struct {
	volume.VolumeHost
	ctx context.Context
	m   *Manager
}

func (h *allocatableHost) GetNodeAllocatable() (corev1.ResourceList, error) {
	return h.m.nodeAllocatable(h.ctx)
}

// projectedPayload is the projected volume plugin's collectData: each
// source's files by its own plugin's rules with the projected defaultMode
// (an item's mode over it), later sources overriding earlier ones on the
// same path. Token and trust-bundle files are private (privateFile).
// Every source is tried; their errors are returned together.
func (m *Manager) projectedPayload(ctx context.Context, pod *corev1.Pod, volume string, p *corev1.ProjectedVolumeSource) (payload, error) {
	mode := modeOr(p.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
	out := payload{}
	var errs []error
	for i, src := range p.Sources {
		var files payload
		var err error
		switch {
		case src.Secret != nil:
			files, err = m.secretPayload(ctx, pod.Namespace, src.Secret.Name, src.Secret.Items, mode, p.DefaultUser, src.Secret.Optional)
		case src.ConfigMap != nil:
			files, err = m.configMapPayload(ctx, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, mode, p.DefaultUser, src.ConfigMap.Optional)
		case src.DownwardAPI != nil:
			files, err = m.downwardPayload(ctx, pod, src.DownwardAPI.Items, mode, p.DefaultUser)
		case src.ServiceAccountToken != nil:
			files, err = m.tokenPayload(ctx, pod, src.ServiceAccountToken, *mode, p.DefaultUser)
		case src.ClusterTrustBundle != nil:
			files, err = m.trustBundlePayload(ctx, pod, src.ClusterTrustBundle, *mode, p.DefaultUser)
		case src.PodCertificate != nil:
			files, err = m.podCertificatePayload(ctx, pod, volume, i, src.PodCertificate, *mode, p.DefaultUser)
		default:
			err = errors.New("unsupported projected source")
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for k, v := range files {
			out[k] = v
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// tokenPayload is a serviceAccountToken source's one file.
func (m *Manager) tokenPayload(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection, mode int32, defaultUser *int64) (payload, error) {
	files, err := m.serviceAccountTokenFiles(ctx, pod, src)
	if err != nil {
		return nil, err
	}
	return privateFile(pod, src.Path, files[src.Path], mode, defaultUser, src.User), nil
}

// trustBundlePayload is a clusterTrustBundle source's one file: the PEM
// certificates of the bundle it names, or of every bundle of its signer
// that its label selector matches, deduplicated and ordered by the
// kubelet's own ClusterTrustBundle manager. An optional source that
// matches nothing is an empty file; a required one fails the pod's start.
func (m *Manager) trustBundlePayload(ctx context.Context, pod *corev1.Pod, src *corev1.ClusterTrustBundleProjection, mode int32, defaultUser *int64) (payload, error) {
	allowMissing := optional(src.Optional)
	var anchors []byte
	var err error
	switch {
	case src.Name != nil:
		anchors, err = m.trustBundles.GetTrustAnchorsByName(ctx, *src.Name, allowMissing)
	case src.SignerName != nil:
		anchors, err = m.trustBundles.GetTrustAnchorsBySigner(ctx, *src.SignerName, src.LabelSelector, allowMissing)
	default:
		err = errors.New("a clusterTrustBundle projection needs a name or a signerName")
	}
	if err != nil {
		return nil, fmt.Errorf("clusterTrustBundle for %s: %w", src.Path, err)
	}
	return privateFile(pod, src.Path, anchors, mode, defaultUser, src.User), nil
}

// podCertificatePayload is a podCertificate source's files: the private key
// and certificate chain the pod certificate manager holds for it, as one
// credential bundle (key first), and or as separate key and chain files.
// Until a signer has issued the first certificate there are none, and the
// pod's start waits, as the kubelet's.
func (m *Manager) podCertificatePayload(ctx context.Context, pod *corev1.Pod, volume string, source int,
	src *corev1.PodCertificateProjection, mode int32, defaultUser *int64) (payload, error) {
	key, chain, err := m.podCerts.GetPodCertificateCredentialBundle(ctx, pod.Namespace, pod.Name, string(pod.UID), volume, source)
	if err != nil {
		return nil, fmt.Errorf("podCertificate of signer %s: %w", src.SignerName, err)
	}
	out := payload{}
	add := func(path string, data []byte) {
		if path != "" {
			maps.Copy(out, privateFile(pod, path, data, mode, defaultUser, src.User))
		}
	}
	add(src.CredentialBundlePath, append(slices.Clone(key), chain...))
	add(src.KeyPath, key)
	add(src.CertificateChainPath, chain)
	return out, nil
}

// privateFile is a projected file that belongs to one user: the source's
// or the volume's user, else the pod's single run-as user (upstream's
// FsUserFrom). It is 0600 when it gets an owner or the pod an fsGroup
// (the group-read bit then comes from the ownership change), as
// upstream's projected plugin makes token and trust-bundle files.
func privateFile(pod *corev1.Pod, path string, data []byte, mode int32, defaultUser, sourceUser *int64) payload {
	fsUser := volumeutil.FsUserFrom(pod)
	if u := volumeutil.ResolvesFsUser(defaultUser, sourceUser); u != nil {
		fsUser = u
	}
	if fsUser != nil || podFSGroup(pod) != nil {
		mode = 0o600
	}
	return payload{path: {Data: data, Mode: mode, FsUser: fsUser}}
}

// podFSGroup is the group the pod's volumes are given, if any.
func podFSGroup(pod *corev1.Pod) *int64 {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroup
}
