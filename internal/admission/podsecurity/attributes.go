package podsecurity

import (
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	psapi "k8s.io/pod-security-admission/api"
)

// attributes presents an API server request to the library. The objects
// are passed through as they are: berth's API server admits v1 objects,
// which is what the library evaluates.
type attributes struct {
	a admission.Attributes
}

var _ psapi.Attributes = attributes{}

func (r attributes) GetName() string                          { return r.a.GetName() }
func (r attributes) GetNamespace() string                     { return r.a.GetNamespace() }
func (r attributes) GetResource() schema.GroupVersionResource { return r.a.GetResource() }
func (r attributes) GetKind() schema.GroupVersionKind         { return r.a.GetKind() }
func (r attributes) GetSubresource() string                   { return r.a.GetSubresource() }
func (r attributes) GetObject() (runtime.Object, error)       { return r.a.GetObject(), nil }
func (r attributes) GetOldObject() (runtime.Object, error)    { return r.a.GetOldObject(), nil }
func (r attributes) GetOperation() admissionv1.Operation {
	return admissionv1.Operation(r.a.GetOperation())
}
func (r attributes) GetUserName() string {
	if u := r.a.GetUserInfo(); u != nil {
		return u.GetName()
	}
	return ""
}
