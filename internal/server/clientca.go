package server

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/auth"
	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/pki"
)

// publishClientCA writes the client CA into kube-system/extension-apiserver-authentication
// (key client-ca-file), with the front proxy's request-header settings
// (requestheader-*), as kube-apiserver does, on every start so that it
// follows the CAs on disk. Joined node agents read it to verify that callers
// of their node server hold the API server's client certificate; extension
// API servers, to trust the aggregator's requests and the user they name.
// The API may still be starting (system namespaces): it retries for a while.
func publishClientCA(ctx context.Context, cfg Config, lb *inprocess.Loopback, cluster *pki.Cluster) error {
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return fmt.Errorf("publish client CA: %w", err)
	}
	want := map[string]string{
		auth.ClientCAConfigMapKey: string(cluster.ClientCA.CertPEM),
		// kube-apiserver's values for its --requestheader-* flags as
		// kubeadm sets them: JSON lists of the headers the aggregator sends.
		"requestheader-client-ca-file":       string(cluster.FrontProxyCA.CertPEM),
		"requestheader-allowed-names":        `["` + pki.FrontProxyClientIdentity.CommonName + `"]`,
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-uid-headers":          `["X-Remote-Uid"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	}
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		lastErr = applyClientCA(ctx, client, want)
		return lastErr == nil, nil
	})
	switch {
	case ctx.Err() != nil:
		return nil // shutting down: not a failure
	case err != nil:
		return fmt.Errorf("publish client CA in %s/%s: %w", auth.ClientCAConfigMapNamespace, auth.ClientCAConfigMapName, lastErr)
	}
	cfg.Logger.Info("client CA published", "configmap", auth.ClientCAConfigMapNamespace+"/"+auth.ClientCAConfigMapName)
	return nil
}

// applyClientCA creates the ConfigMap, or sets the keys of want that differ
// (other keys are left alone).
func applyClientCA(ctx context.Context, client kubernetes.Interface, want map[string]string) error {
	cms := client.CoreV1().ConfigMaps(auth.ClientCAConfigMapNamespace)
	cm, err := cms.Get(ctx, auth.ClientCAConfigMapName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: auth.ClientCAConfigMapName, Namespace: auth.ClientCAConfigMapNamespace}, Data: want}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if hasAll(cm.Data, want) {
		return nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	maps.Copy(cm.Data, want)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// hasAll reports whether data holds every key of want with its value.
func hasAll(data, want map[string]string) bool {
	for k, v := range want {
		if got, ok := data[k]; !ok || got != v {
			return false
		}
	}
	return true
}
