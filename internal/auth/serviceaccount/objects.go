package serviceaccount

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	upstream "k8s.io/kubernetes/pkg/serviceaccount"
)

// ClientObjects reads the objects tokens are bound to through the API (in
// the server, a loopback client with the server's own identity). Each
// authentication costs a GET per bound object: a token is trusted no
// longer than its objects. Upstream's getter (pkg/controller/serviceaccount)
// needs informers for every kind besides, which the server does not keep.
type ClientObjects struct{ Client kubernetes.Interface }

var _ upstream.ServiceAccountTokenGetter = ClientObjects{}

func (o ClientObjects) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return o.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (o ClientObjects) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return o.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (o ClientObjects) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return o.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (o ClientObjects) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return o.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

func (o ClientObjects) GetValidatingWebhookConfiguration(ctx context.Context, name string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return o.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
}

func (o ClientObjects) GetMutatingWebhookConfiguration(ctx context.Context, name string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	return o.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
}
