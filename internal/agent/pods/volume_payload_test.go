package pods

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/kubelet/clustertrustbundle"
	"k8s.io/kubernetes/pkg/kubelet/podcertificate"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/pki"
)

// volumeTestManager is a Manager whose API holds objs, with no runtime:
// enough to prepare a pod's volumes on the host.
func volumeTestManager(t *testing.T, objs ...runtime.Object) *Manager {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}
	return New(Config{NodeName: testNode, DataDir: t.TempDir()}, fake.NewClientset(append(objs, node)...), nil, nil, slog.New(slog.DiscardHandler))
}

func volumePod(volumes ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps", UID: "uid-web", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: testNode, Volumes: volumes},
	}
}

// prepare prepares each of pod's volumes and returns their host paths.
func prepare(t *testing.T, m *Manager, pod *corev1.Pod) map[string]string {
	t.Helper()
	paths, err := m.prepareVolumes(context.Background(), pod)
	if err != nil {
		t.Fatalf("prepare volumes: %v", err)
	}
	return paths
}

var appsConfig = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "apps"}, Data: map[string]string{"a": "A", "b": "B"}}
var appsSecret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "apps"}, Data: map[string][]byte{"k": []byte("K"), "l": []byte("L")}}

// An item's mode wins over the volume's defaultMode; items without one,
// and whole-source volumes, take the defaultMode, or 0644 without one.
func TestVolumeItemModeOverridesDefaultMode(t *testing.T) {
	m := volumeTestManager(t, appsConfig, appsSecret)
	pod := volumePod(
		corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr.To[int32](0o640),
			Items: []corev1.KeyToPath{{Key: "a", Path: "a", Mode: ptr.To[int32](0o400)}, {Key: "b", Path: "dir/b"}},
		}}},
		corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "sec", DefaultMode: ptr.To[int32](0o600),
			Items: []corev1.KeyToPath{{Key: "k", Path: "k", Mode: ptr.To[int32](0o444)}, {Key: "l", Path: "l"}},
		}}},
		corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			DefaultMode: ptr.To[int32](0o604),
			Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: ptr.To[int32](0o400)},
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			},
		}}},
		corev1.Volume{Name: "whole", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
		}}},
	)
	paths := prepare(t, m, pod)
	assertFile(t, filepath.Join(paths["cm"], "a"), "A", 0o400)
	assertFile(t, filepath.Join(paths["cm"], "dir/b"), "B", 0o640)
	assertFile(t, filepath.Join(paths["sec"], "k"), "K", 0o444)
	assertFile(t, filepath.Join(paths["sec"], "l"), "L", 0o600)
	assertFile(t, filepath.Join(paths["info"], "name"), "web", 0o400)
	assertFile(t, filepath.Join(paths["info"], "labels"), `app="web"`, 0o604)
	assertFile(t, filepath.Join(paths["whole"], "a"), "A", 0o644)
	assertFile(t, filepath.Join(paths["whole"], "b"), "B", 0o644)
}

// Each projected source's items take the projected defaultMode unless
// they carry a mode of their own.
func TestProjectedVolumeModesPerSource(t *testing.T) {
	m := volumeTestManager(t, appsConfig, appsSecret)
	pod := volumePod(corev1.Volume{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o440),
		Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
				Items: []corev1.KeyToPath{{Key: "a", Path: "cm/a", Mode: ptr.To[int32](0o400)}, {Key: "b", Path: "cm/b"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "info/name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: ptr.To[int32](0o600)},
			}}},
		},
	}}})
	dir := prepare(t, m, pod)["all"]
	assertFile(t, filepath.Join(dir, "cm/a"), "A", 0o400)
	assertFile(t, filepath.Join(dir, "cm/b"), "B", 0o440)
	assertFile(t, filepath.Join(dir, "k"), "K", 0o440)
	assertFile(t, filepath.Join(dir, "l"), "L", 0o440)
	assertFile(t, filepath.Join(dir, "info/name"), "web", 0o600)
}

// An optional source that is missing, or lacks a key an item names, gives
// no file for it and no error; a required one fails the volume and writes
// nothing.
func TestVolumeMissingKeyOfOptionalSource(t *testing.T) {
	m := volumeTestManager(t, appsConfig)
	missingKey := []corev1.KeyToPath{{Key: "a", Path: "a"}, {Key: "nope", Path: "nope"}}
	optionalVolumes := volumePod(
		corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: missingKey, Optional: ptr.To(true),
		}}},
		corev1.Volume{Name: "gone", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "gone", Optional: ptr.To(true),
		}}},
		corev1.Volume{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: missingKey, Optional: ptr.To(true)}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: ptr.To(true)}},
		}}}},
	)
	paths := prepare(t, m, optionalVolumes)
	assertFile(t, filepath.Join(paths["cm"], "a"), "A", 0o644)
	assertFile(t, filepath.Join(paths["proj"], "a"), "A", 0o644)
	for _, p := range []string{filepath.Join(paths["cm"], "nope"), filepath.Join(paths["proj"], "nope")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s: a missing optional key gave a file (%v)", p, err)
		}
	}
	if got := visibleFiles(t, paths["gone"]); len(got) > 0 {
		t.Errorf("a missing optional secret gave files: %s", got)
	}

	for name, v := range map[string]corev1.VolumeSource{
		"required key":    {ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: missingKey}},
		"required source": {Secret: &corev1.SecretVolumeSource{SecretName: "gone"}},
		"required projected key": {Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: missingKey}},
		}}},
	} {
		t.Run(name, func(t *testing.T) {
			pod := volumePod(corev1.Volume{Name: "v", VolumeSource: v})
			pod.UID = types.UID("uid-" + strings.ReplaceAll(name, " ", "-"))
			if _, err := m.prepareVolumes(context.Background(), pod); err == nil {
				t.Fatal("volume prepared; want an error for the missing " + name)
			}
			if _, err := os.Stat(filepath.Join(m.volumeDir(pod, "v"), "a")); !os.IsNotExist(err) {
				t.Errorf("a failed volume was partly written (%v)", err)
			}
		})
	}
}

// With fsGroup, content files get the group and group-read on top of
// their mode (never group-write: the volume is read-only), directories
// setgid; an emptyDir gets the group once, group-writable.
func TestVolumeFilesWithFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to an arbitrary fsGroup needs root")
	}
	const fsGroup = 4321
	m := volumeTestManager(t, appsConfig, appsSecret)
	pod := volumePod(
		corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "sec", DefaultMode: ptr.To[int32](0o400),
			Items: []corev1.KeyToPath{{Key: "k", Path: "k"}, {Key: "l", Path: "sub/l", Mode: ptr.To[int32](0o604)}},
		}}},
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](fsGroup)}
	paths := prepare(t, m, pod)

	assertFile(t, filepath.Join(paths["sec"], "k"), "K", 0o440)
	assertFile(t, filepath.Join(paths["sec"], "sub/l"), "L", 0o644)
	assertGroup(t, filepath.Join(paths["sec"], "k"), fsGroup)
	assertGroup(t, filepath.Join(paths["sec"], "sub/l"), fsGroup)
	if st, err := os.Stat(filepath.Join(paths["sec"], "sub")); err != nil || st.Mode()&os.ModeSetgid == 0 {
		t.Errorf("directory in the volume not setgid: %v, %v", st.Mode(), err)
	}

	scratch := paths["scratch"]
	assertGroup(t, scratch, fsGroup)
	if st, err := os.Stat(scratch); err != nil || st.Mode()&os.ModeSetgid == 0 || st.Mode().Perm() != 0o777 {
		t.Errorf("emptyDir mode %v, %v; want setgid and 0777", st.Mode(), err)
	}
	// A file a container writes later keeps its own group across syncs.
	later := filepath.Join(scratch, "later")
	if err := os.WriteFile(later, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(later, -1, 0); err != nil {
		t.Fatal(err)
	}
	prepare(t, m, pod)
	assertGroup(t, later, 0)
	assertFile(t, later, "", 0o600)
}

func assertGroup(t *testing.T, path string, gid uint32) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if got := st.Sys().(*syscall.Stat_t).Gid; got != gid {
		t.Errorf("%s group %d, want %d", path, got, gid)
	}
}

// visibleFiles are the names in a content volume's directory that a
// container sees as files: all but the writer's ..data and its versions.
func visibleFiles(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	for _, n := range strings.Split(ls(t, dir), ",") {
		if n != "" && !strings.HasPrefix(n, "..") {
			names = append(names, n)
		}
	}
	return names
}

// A clusterTrustBundle source projects the bundle it names, or the
// certificates of every bundle of its signer its labels select, through
// the kubelet's own manager; an optional source that matches nothing is
// an empty file, a required one fails the volume.
func TestProjectedClusterTrustBundles(t *testing.T) {
	a, b, other := testCertificatePEM(t, "a"), testCertificatePEM(t, "b"), testCertificatePEM(t, "other")
	bundle := func(name, signer, certs string, labels map[string]string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: certs}}
	}
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}},
		bundle("example.com:ca:a", "example.com/ca", a, map[string]string{"team": "x"}),
		bundle("example.com:ca:b", "example.com/ca", b, map[string]string{"team": "y"}),
		bundle("standalone", "", other, nil))
	client.Resources = []*metav1.APIResourceList{{GroupVersion: certificatesv1.SchemeGroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: "clustertrustbundles", Kind: "ClusterTrustBundle", Verbs: []string{"get", "list", "watch"}}}}}
	m := New(Config{NodeName: testNode, DataDir: t.TempDir()}, client, nil, nil, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.trustBundles = clustertrustbundle.NewLazyInformerManager(ctx, client, 10)

	source := func(p corev1.ClusterTrustBundleProjection) corev1.VolumeProjection {
		return corev1.VolumeProjection{ClusterTrustBundle: &p}
	}
	pod := volumePod(corev1.Volume{Name: "ca", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			source(corev1.ClusterTrustBundleProjection{Name: ptr.To("standalone"), Path: "named.pem"}),
			source(corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/ca"), LabelSelector: &metav1.LabelSelector{}, Path: "all.pem"}),
			source(corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/ca"),
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "y"}}, Path: "y.pem"}),
			source(corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/ca"),
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "z"}}, Optional: ptr.To(true), Path: "none.pem"}),
		},
	}}})
	dir := prepare(t, m, pod)["ca"]
	assertFile(t, filepath.Join(dir, "named.pem"), other, 0o644)
	all, err := os.ReadFile(filepath.Join(dir, "all.pem"))
	if err != nil || !strings.Contains(string(all), a) || !strings.Contains(string(all), b) || strings.Contains(string(all), other) {
		t.Errorf("all.pem = %q, %v; want the signer's two certificates and no other", all, err)
	}
	assertFile(t, filepath.Join(dir, "y.pem"), b, 0o644)
	assertFile(t, filepath.Join(dir, "none.pem"), "", 0o644)

	required := volumePod(corev1.Volume{Name: "ca", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{source(corev1.ClusterTrustBundleProjection{Name: ptr.To("missing"), Path: "ca.pem"})},
	}}})
	if _, err := m.prepareVolumes(ctx, required); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("a required bundle that does not exist: %v, want an error naming it", err)
	}
}

// testCertificatePEM is a fresh self-signed CA certificate named cn.
func testCertificatePEM(t *testing.T, cn string) string {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(t.TempDir(), cn)
	if err != nil {
		t.Fatal(err)
	}
	return string(ca.CertPEM)
}

// issuedCredentials is a pod certificate manager that has issued one
// key and chain, to projections of pod "uid-web" volume "certs" only.
type issuedCredentials struct {
	*podcertificate.NoOpManager
	key, chain []byte
}

func (c issuedCredentials) GetPodCertificateCredentialBundle(_ context.Context, _, _, podUID, volume string, _ int) ([]byte, []byte, error) {
	if podUID != "uid-web" || volume != "certs" {
		return nil, nil, errors.New("no credentials yet")
	}
	return c.key, c.chain, nil
}

// A podCertificate source writes the issued key and chain as a credential
// bundle (key first) and as separate files, private when the pod has an
// fsGroup (0600, and group-readable by it); before issuance the volume
// fails, so the pod's start waits.
func TestProjectedPodCertificates(t *testing.T) {
	m := volumeTestManager(t)
	m.podCerts = issuedCredentials{key: []byte("KEY\n"), chain: []byte("CHAIN\n")}
	certs := func(volume string) corev1.Volume {
		return corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](0o644),
			Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/signer",
				KeyType: "ED25519", CredentialBundlePath: "bundle.pem", KeyPath: "key.pem", CertificateChainPath: "chain.pem"}}},
		}}}
	}
	pod := volumePod(certs("certs"))
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To(int64(os.Getgid()))}
	dir := prepare(t, m, pod)["certs"]
	assertFile(t, filepath.Join(dir, "bundle.pem"), "KEY\nCHAIN\n", 0o640)
	assertFile(t, filepath.Join(dir, "key.pem"), "KEY\n", 0o640)
	assertFile(t, filepath.Join(dir, "chain.pem"), "CHAIN\n", 0o640)

	if _, err := m.prepareVolumes(context.Background(), volumePod(certs("not-issued"))); err == nil || !strings.Contains(err.Error(), "no credentials yet") {
		t.Fatalf("a certificate not issued yet: %v, want the volume to fail", err)
	}
}
