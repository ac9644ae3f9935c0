package server

import (
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/approval"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/signing"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction"
	"k8s.io/kubernetes/plugin/pkg/admission/network/defaultingressclass"
	"k8s.io/kubernetes/plugin/pkg/admission/nodedeclaredfeatures"
	"k8s.io/kubernetes/plugin/pkg/admission/podresize"
	"k8s.io/kubernetes/plugin/pkg/admission/podtopologylabels"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/persistentvolume/resize"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageclass/setdefault"

	"github.com/berth/berth/internal/admission/internalform"

	// The internal types and conversions these plugins act on, in the
	// legacy scheme internalform converts through.
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
)

// upstreamPlugin is one of kube-apiserver's default admission plugins that
// berth builds as kube-apiserver does: registered under its name and
// initialized by upstream's generic initializer.
type upstreamPlugin struct {
	name     string
	register func(*admission.Plugins)
	// kinds are what the plugin acts on; other requests skip it.
	kinds []schema.GroupKind
}

var (
	csrKind         = certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest").GroupKind()
	trustBundleKind = schema.GroupKind{Group: certificatesv1.GroupName, Kind: "ClusterTrustBundle"}
	claimKind       = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim").GroupKind()
	bindingKind     = corev1.SchemeGroupVersion.WithKind("Binding").GroupKind()
)

// classAndCertificatePlugins are kube-apiserver's default plugins from
// DefaultStorageClass to PodResizeValidator, in its order; berth runs them
// after RuntimeClass (upstream runs DefaultStorageClass and
// PersistentVolumeClaimResize before it and StorageObjectInUseProtection
// between them: none of the three reads what another sets):
//   - DefaultStorageClass: a claim without a class gets the default one;
//   - PersistentVolumeClaimResize: a claim grows only if its class allows expansion;
//   - CertificateApproval, CertificateSigning: approving a CSR needs
//     `approve`, and issuing its certificate `sign`, on its signer;
//   - ClusterTrustBundleAttest: a bundle naming a signer needs `attest` on it;
//   - CertificateSubjectRestriction: no kube-apiserver-client CSR for system:masters;
//   - DefaultIngressClass: an Ingress without a class gets the default one;
//   - PodTopologyLabels: a pod bound to a node gets the node's zone and
//     region labels (through the Binding, which the bind copies);
//   - NodeDeclaredFeatureValidator: a bound pod's update may not need a
//     feature its node does not declare;
//   - PodResizeValidator: a resize must fit the node's allocatable.
var classAndCertificatePlugins = []upstreamPlugin{
	{setdefault.PluginName, setdefault.Register, []schema.GroupKind{claimKind}},
	{resize.PluginName, resize.Register, []schema.GroupKind{claimKind}},
	{approval.PluginName, approval.Register, []schema.GroupKind{csrKind}},
	{signing.PluginName, signing.Register, []schema.GroupKind{csrKind}},
	{ctbattest.PluginName, ctbattest.Register, []schema.GroupKind{trustBundleKind}},
	{subjectrestriction.PluginName, subjectrestriction.Register, []schema.GroupKind{csrKind}},
	{defaultingressclass.PluginName, defaultingressclass.Register, []schema.GroupKind{networkingv1.SchemeGroupVersion.WithKind("Ingress").GroupKind()}},
	{podtopologylabels.PluginName, podtopologylabels.Register, []schema.GroupKind{podKind, bindingKind}},
	{nodedeclaredfeatures.PluginName, nodedeclaredfeatures.Register, []schema.GroupKind{podKind, resourcev1.SchemeGroupVersion.WithKind("ResourceSlice").GroupKind()}},
	{podresize.PluginName, podresize.Register, []schema.GroupKind{podKind}},
}

// newUpstreamPlugins builds specs with kube-apiserver's generic plugin
// initializer (init), and wraps each for v1 requests (internalform) and its
// informers' sync.
func newUpstreamPlugins(init admission.PluginInitializer, specs []upstreamPlugin) ([]admission.Interface, error) {
	registry := admission.NewPlugins()
	out := make([]admission.Interface, 0, len(specs))
	for _, spec := range specs {
		spec.register(registry)
		plugin, err := registry.InitPlugin(spec.name, nil, init)
		if err != nil {
			return nil, fmt.Errorf("admission plugin %s: %w", spec.name, err)
		}
		if ready, ok := plugin.(readiness); ok {
			plugin = &syncedFirst{plugin: plugin, ready: ready}
		}
		out = append(out, internalform.WrapKinds(plugin, spec.kinds...))
	}
	return out, nil
}
