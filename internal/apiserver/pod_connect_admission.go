package apiserver

import (
	"context"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// connectAdmission runs the admission chain on pods/exec, pods/attach and
// pods/portforward as upstream's connect handler does: the CONNECT
// operation on the request's options (PodExecOptions, ...), mutation then
// validation, before anything reaches the node. Webhooks and policies that
// forbid exec into pods rely on it.
type connectAdmission struct {
	admit   admission.Interface
	scheme  *runtime.Scheme
	params  runtime.ParameterCodec
	objects admission.ObjectInterfaces
}

func newConnectAdmission(admit admission.Interface, scheme *runtime.Scheme) *connectAdmission {
	return &connectAdmission{admit: admit, scheme: scheme, params: runtime.NewParameterCodec(scheme), objects: admission.NewObjectInterfacesFromScheme(scheme)}
}

// connectOptions are the options kind each streaming subresource decodes.
var connectOptions = map[string]func() runtime.Object{
	"exec":        func() runtime.Object { return &corev1.PodExecOptions{} },
	"attach":      func() runtime.Object { return &corev1.PodAttachOptions{} },
	"portforward": func() runtime.Object { return &corev1.PodPortForwardOptions{} },
}

// check admits a connect request for pod name with the query's options.
func (a *connectAdmission) check(ctx context.Context, sub string, info *request.RequestInfo, query url.Values) error {
	newOpts, ok := connectOptions[sub]
	if !ok || a.admit == nil || !a.admit.Handles(admission.Connect) {
		return nil
	}
	opts := newOpts()
	if err := a.params.DecodeParameters(query, corev1.SchemeGroupVersion, opts); err != nil {
		return err
	}
	kinds, _, err := a.scheme.ObjectKinds(opts)
	if err != nil {
		return err
	}
	u, _ := request.UserFrom(ctx)
	attrs := admission.NewAttributesRecord(opts, nil, kinds[0], info.Namespace, info.Name, corev1.SchemeGroupVersion.WithResource("pods"),
		sub, admission.Connect, nil, false, u)
	if m, ok := a.admit.(admission.MutationInterface); ok {
		if err := m.Admit(ctx, attrs, a.objects); err != nil {
			return err
		}
	}
	if v, ok := a.admit.(admission.ValidationInterface); ok {
		return v.Validate(ctx, attrs, a.objects)
	}
	return nil
}
