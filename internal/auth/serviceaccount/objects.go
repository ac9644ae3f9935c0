package serviceaccount

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ClientObjects reads the bound objects through the API (in the server, a
// loopback client with the server's own identity). Each authentication
// costs one or two GETs: a token is trusted no longer than its objects.
type ClientObjects struct{ Client kubernetes.Interface }

func (o ClientObjects) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return o.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (o ClientObjects) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return o.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}
