package apiserver

import (
	"context"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	api "k8s.io/kubernetes/pkg/apis/core"
	k8sv1 "k8s.io/kubernetes/pkg/apis/core/v1"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

// finalizerKubernetes is the namespace finalizer the namespace controller removes.
const finalizerKubernetes corev1.FinalizerName = "kubernetes"

func namespaceRules() kindRules {
	return kindRules{
		name:      apivalidation.NameIsDNSLabel,
		hasStatus: true,
		validate:  validateNamespaceSpec,
		prepareForCreate: func(_ context.Context, obj runtime.Object) {
			ns := obj.(*corev1.Namespace)
			ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
			if !hasNamespaceFinalizer(ns.Spec.Finalizers) {
				ns.Spec.Finalizers = append(ns.Spec.Finalizers, finalizerKubernetes)
			}
		},
		// As upstream, spec.finalizers change only through namespaces/finalize:
		// an update of the namespace itself keeps them.
		prepareForUpdate: func(obj, old runtime.Object) {
			obj.(*corev1.Namespace).Spec.Finalizers = old.(*corev1.Namespace).Spec.Finalizers
		},
		partUpdates: map[string]partUpdate{"finalize": {
			prepare:  copyStatus,
			validate: validateNamespaceFinalizers,
		}},
		fields: func(obj runtime.Object) fields.Set {
			ns := obj.(*corev1.Namespace)
			return fields.Set{"metadata.name": ns.Name, "status.phase": string(ns.Status.Phase)}
		},
	}
}

// validateNamespaceSpec checks a namespace's spec with upstream's
// ValidateNamespace (metadata is checked generically): each of
// spec.finalizers a qualified or standard finalizer name.
func validateNamespaceSpec(obj runtime.Object) field.ErrorList {
	var ns api.Namespace
	if err := k8sv1.Convert_v1_Namespace_To_core_Namespace(obj.(*corev1.Namespace), &ns, nil); err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	var errs field.ErrorList
	for _, err := range corevalidation.ValidateNamespace(&ns) {
		if strings.HasPrefix(err.Field, "spec.") {
			errs = append(errs, err)
		}
	}
	return errs
}

// validateNamespaceFinalizers checks spec.finalizers as upstream's
// namespaces/finalize does: each a qualified name.
func validateNamespaceFinalizers(obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec", "finalizers")
	for i, f := range obj.(*corev1.Namespace).Spec.Finalizers {
		errs = append(errs, apivalidation.ValidateFinalizerName(string(f), path.Index(i))...)
	}
	return errs
}

func hasNamespaceFinalizer(finalizers []corev1.FinalizerName) bool {
	for _, f := range finalizers {
		if f == finalizerKubernetes {
			return true
		}
	}
	return false
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
