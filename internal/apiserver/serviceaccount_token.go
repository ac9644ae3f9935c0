package apiserver

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
)

// ServiceAccountTokens serves serviceaccounts/NAME/token (TokenRequest).
type ServiceAccountTokens struct {
	Issuer TokenIssuer
	// Audiences are what a token is for when its request names none: the
	// API server itself.
	Audiences []string
}

// TokenIssuer signs a token for sa, bound to pod when set
// (internal/auth/serviceaccount.Issuer).
type TokenIssuer interface {
	Issue(ctx context.Context, sa *corev1.ServiceAccount, pod *corev1.Pod, node *corev1.Node, audiences []string, lifetime time.Duration) (string, time.Time, error)
}

// Token lifetimes, as upstream: an hour unless asked, never under ten
// minutes; berth caps them at a day (upstream's cap is a flag).
const (
	defaultTokenSeconds = 3600
	minTokenSeconds     = 600
	maxTokenSeconds     = 24 * 3600
)

// tokenREST issues a TokenRequest's token after checking the service
// account exists and, when the token is to be bound to a pod, that the pod
// exists (with the given UID) and runs as that service account.
type tokenREST struct {
	serviceAccounts rest.Getter
	pods            rest.Getter
	// nodes finds a bound pod's node, which the token names.
	nodes  rest.Getter
	tokens *ServiceAccountTokens
}

var _ rest.NamedCreater = (*tokenREST)(nil)

func (r *tokenREST) New() runtime.Object { return &authenticationv1.TokenRequest{} }
func (r *tokenREST) Destroy()            {}

func (r *tokenREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	if r.tokens == nil || r.tokens.Issuer == nil {
		return nil, apierrors.NewServiceUnavailable("this server issues no service-account tokens")
	}
	req, ok := obj.(*authenticationv1.TokenRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenRequest: %T", obj))
	}
	lifetime, errs := tokenLifetime(req.Spec.ExpirationSeconds)
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = r.tokens.Audiences
	}
	ref := req.Spec.BoundObjectRef
	if ref != nil && (ref.Kind != "Pod" || (ref.APIVersion != "" && ref.APIVersion != "v1") || ref.Name == "") {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "boundObjectRef"), fmt.Sprintf("%s %s %q", ref.APIVersion, ref.Kind, ref.Name), []string{"v1 Pod with a name"}))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: authenticationv1.GroupName, Kind: "TokenRequest"}, name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, req.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	saObj, err := r.serviceAccounts.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sa := saObj.(*corev1.ServiceAccount)
	var pod *corev1.Pod
	var node *corev1.Node
	if ref != nil {
		if pod, err = r.boundPod(ctx, sa, ref); err != nil {
			return nil, err
		}
		node = r.podNode(ctx, pod)
	}
	token, expires, err := r.tokens.Issuer.Issue(ctx, sa, pod, node, req.Spec.Audiences, lifetime)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out := &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: sa.Name, Namespace: sa.Namespace, CreationTimestamp: metav1.Now()}, Spec: req.Spec}
	seconds := int64(lifetime / time.Second)
	out.Spec.ExpirationSeconds = &seconds
	if pod != nil {
		out.Spec.BoundObjectRef.UID = pod.UID
	}
	out.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(expires)}
	return out, nil
}

// tokenLifetime is the requested lifetime: defaulted, at least ten
// minutes, capped at a day.
func tokenLifetime(requested *int64) (time.Duration, field.ErrorList) {
	seconds := int64(defaultTokenSeconds)
	if requested != nil {
		seconds = *requested
	}
	if seconds < minTokenSeconds {
		return 0, field.ErrorList{field.Invalid(field.NewPath("spec", "expirationSeconds"), seconds, "may not specify a duration less than 10 minutes")}
	}
	return time.Duration(min(seconds, maxTokenSeconds)) * time.Second, nil
}

// podNode is the node pod is bound to, or nil (unbound, or the node is
// gone): as upstream, the token then names no node.
func (r *tokenREST) podNode(ctx context.Context, pod *corev1.Pod) *corev1.Node {
	if pod.Spec.NodeName == "" || r.nodes == nil {
		return nil
	}
	obj, err := r.nodes.Get(withObjectNamespace(ctx, ""), pod.Spec.NodeName, &metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return obj.(*corev1.Node)
}

func (r *tokenREST) boundPod(ctx context.Context, sa *corev1.ServiceAccount, ref *authenticationv1.BoundObjectReference) (*corev1.Pod, error) {
	obj, err := r.pods.Get(ctx, ref.Name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	if ref.UID != "" && ref.UID != pod.UID {
		return nil, apierrors.NewConflict(corev1.Resource("pods"), ref.Name, fmt.Errorf("the UID in the bound object reference (%s) does not match the pod's (%s)", ref.UID, pod.UID))
	}
	if pod.Spec.ServiceAccountName != sa.Name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind a token for service account %q to pod %q, which runs as %q", sa.Name, pod.Name, pod.Spec.ServiceAccountName))
	}
	return pod, nil
}
