package apiserver

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	// The certificates group's internal types, defaults and conversions in
	// the legacy scheme, which its registry strategies use.
	certificatesapi "k8s.io/kubernetes/pkg/apis/certificates"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	"k8s.io/kubernetes/pkg/registry/certificates/clustertrustbundle"
	"k8s.io/kubernetes/pkg/registry/certificates/podcertificaterequest"
	"k8s.io/utils/clock"
)

// certificateResources are certificates.k8s.io/v1's ClusterTrustBundles
// and PodCertificateRequests, defaulted and validated by upstream's
// registry strategies and stored as kube-apiserver v1.37 stores them:
// under its keys, as v1beta1 (the kinds are new in v1, and the storage
// version lags a release so that a cluster can be downgraded).
func certificateResources() []*resource {
	certificates := certificatesv1.SchemeGroupVersion
	return []*resource{
		{
			gvr: certificates.WithResource("clustertrustbundles"), kind: "ClusterTrustBundle", singular: "clustertrustbundle",
			newObj: newOf[certificatesv1.ClusterTrustBundle](), newList: newOf[certificatesv1.ClusterTrustBundleList](),
			stored: storedThroughInternal(certificatesv1beta1.SchemeGroupVersion, func() runtime.Object { return &certificatesapi.ClusterTrustBundle{} },
				newOf[certificatesv1beta1.ClusterTrustBundle](), newOf[certificatesv1.ClusterTrustBundle]()),
			rules:    kindRules{fields: clusterTrustBundleFields},
			registry: &registryKind{strategy: clustertrustbundle.Strategy, newInternal: func() runtime.Object { return &certificatesapi.ClusterTrustBundle{} }},
		},
		{
			gvr: certificates.WithResource("podcertificaterequests"), kind: "PodCertificateRequest", singular: "podcertificaterequest", namespaced: true,
			newObj: newOf[certificatesv1.PodCertificateRequest](), newList: newOf[certificatesv1.PodCertificateRequestList](),
			stored: storedThroughInternal(certificatesv1beta1.SchemeGroupVersion, func() runtime.Object { return &certificatesapi.PodCertificateRequest{} },
				newOf[certificatesv1beta1.PodCertificateRequest](), newOf[certificatesv1.PodCertificateRequest]()),
			rules: kindRules{fields: podCertificateRequestFields},
			registry: &registryKind{newInternal: func() runtime.Object { return &certificatesapi.PodCertificateRequest{} },
				withConfig: func(deps strategyDeps) (upstreamStrategy, map[string]upstreamStrategy) {
					s := podcertificaterequest.NewStrategy()
					return s, map[string]upstreamStrategy{"status": podcertificaterequest.NewStatusStrategy(s, deps.authorizer, clock.RealClock{})}
				}},
			subresources: []string{"status"},
			// A node's agent watches the requests of its own pods.
			indexFields: []string{"spec.nodeName"},
		},
	}
}

// clusterTrustBundleFields are the field selectors of upstream's
// ClusterTrustBundle storage (its getAttrs is not exported): the kubelet
// lists the bundles of one signer.
func clusterTrustBundleFields(obj runtime.Object) fields.Set {
	bundle := obj.(*certificatesv1.ClusterTrustBundle)
	return generic.AddObjectMetaFieldsSet(fields.Set{"spec.signerName": bundle.Spec.SignerName}, &bundle.ObjectMeta, false)
}

// podCertificateRequestFields are the field selectors of upstream's
// PodCertificateRequest storage (its getAttrs is not exported).
func podCertificateRequestFields(obj runtime.Object) fields.Set {
	req := obj.(*certificatesv1.PodCertificateRequest)
	return generic.AddObjectMetaFieldsSet(fields.Set{"spec.signerName": req.Spec.SignerName, "spec.podName": req.Spec.PodName,
		"spec.nodeName": string(req.Spec.NodeName)}, &req.ObjectMeta, true)
}
