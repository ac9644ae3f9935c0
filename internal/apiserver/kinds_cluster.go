package apiserver

import (
	"context"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// finalizerKubernetes is the namespace finalizer the namespace controller removes.
const finalizerKubernetes corev1.FinalizerName = "kubernetes"

// namespaceRules give the field selectors namespaces are read by;
// upstream's namespace strategies do the rest.
func namespaceRules() kindRules {
	return kindRules{
		fields: func(obj runtime.Object) fields.Set {
			ns := obj.(*corev1.Namespace)
			return fields.Set{"metadata.name": ns.Name, "status.phase": string(ns.Status.Phase)}
		},
	}
}

func hasNamespaceFinalizer(finalizers []corev1.FinalizerName) bool {
	return slices.Contains(finalizers, finalizerKubernetes)
}

// nodeRules give the field selectors nodes are read by; upstream's node
// strategy does the rest.
func nodeRules() kindRules {
	return kindRules{
		fields: func(obj runtime.Object) fields.Set {
			node := obj.(*corev1.Node)
			return fields.Set{"metadata.name": node.Name, "spec.unschedulable": fmt.Sprint(node.Spec.Unschedulable)}
		},
	}
}

func csrRules() kindRules {
	return kindRules{
		// Any name that is a safe path segment, as upstream: the kubelet names
		// its CSRs "node-csr-<base64url digest>", upper case included.
		name:      pathSegmentName,
		hasStatus: true,
		// The requester's identity is recorded by the server, never taken
		// from the body: approvers (and node bootstrap) trust it.
		prepareForCreate: func(ctx context.Context, obj runtime.Object) {
			csr := obj.(*certificatesv1.CertificateSigningRequest)
			csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra = "", "", nil, nil
			if u, ok := genericapirequest.UserFrom(ctx); ok {
				csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = u.GetName(), u.GetUID(), u.GetGroups()
				for k, v := range u.GetExtra() {
					if csr.Spec.Extra == nil {
						csr.Spec.Extra = map[string]certificatesv1.ExtraValue{}
					}
					csr.Spec.Extra[k] = v
				}
			}
		},
		statusUpdate: func(subresource string, obj, old runtime.Object) {
			if subresource == "approval" { // approvers decide; signers issue
				obj.(*certificatesv1.CertificateSigningRequest).Status.Certificate = old.(*certificatesv1.CertificateSigningRequest).Status.Certificate
			}
		},
		validate: func(obj runtime.Object) field.ErrorList {
			csr := obj.(*certificatesv1.CertificateSigningRequest)
			path := field.NewPath("spec")
			var errs field.ErrorList
			if len(csr.Spec.Request) == 0 {
				errs = append(errs, field.Required(path.Child("request"), ""))
			}
			if csr.Spec.SignerName == "" {
				errs = append(errs, field.Required(path.Child("signerName"), ""))
			}
			return errs
		},
		validateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return apivalidation.ValidateImmutableField(obj.(*certificatesv1.CertificateSigningRequest).Spec,
				old.(*certificatesv1.CertificateSigningRequest).Spec, field.NewPath("spec"))
		},
		fields: func(obj runtime.Object) fields.Set {
			csr := obj.(*certificatesv1.CertificateSigningRequest)
			return fields.Set{"metadata.name": csr.Name, "spec.signerName": csr.Spec.SignerName}
		},
	}
}

// pathSegmentName accepts any name that is safe as one URL path segment.
func pathSegmentName(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}
