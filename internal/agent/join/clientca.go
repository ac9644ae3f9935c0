package join

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/atomicfile"
	"github.com/berth/berth/internal/auth"
	"github.com/berth/berth/internal/pki"
)

// ClientCAPath is where a joined node keeps the CA of the API server's
// client certificate, which its node server verifies callers against.
func ClientCAPath(dir string) string { return filepath.Join(pkiDir(dir), "client-ca.crt") }

// clientCAPatience bounds how long a missing ConfigMap or a 403 is retried:
// the server publishes the CA, and its RBAC sees the default binding that
// lets nodes read it, moments after it starts.
const clientCAPatience = time.Minute

// FetchClientCA reads the client CA the API server publishes in
// kube-system/extension-apiserver-authentication (client-ca-file), as an
// extension API server would, checks that it holds certificates and writes
// it to ClientCAPath (0600) on every start, so that it follows the server's.
// When the server cannot be asked, a copy from an earlier start is used.
func FetchClientCA(ctx context.Context, client kubernetes.Interface, dir string, log *slog.Logger) (string, error) {
	path := ClientCAPath(dir)
	var caPEM []byte
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, time.Second, clientCAPatience, true, func(ctx context.Context) (bool, error) {
		caPEM, lastErr = readClientCA(ctx, client)
		if lastErr == nil || apierrors.IsNotFound(lastErr) || apierrors.IsForbidden(lastErr) {
			return lastErr == nil, nil
		}
		return false, lastErr
	})
	if err != nil {
		if _, statErr := os.Stat(path); statErr == nil && ctx.Err() == nil {
			log.Warn("could not refresh the API server's client CA; using the stored one", "path", path, "err", lastErr)
			return path, nil
		}
		return "", fmt.Errorf("the API server's client CA (%s/%s): %w", auth.ClientCAConfigMapNamespace, auth.ClientCAConfigMapName, lastErr)
	}
	if err := atomicfile.WriteFile(path, caPEM, 0o600); err != nil {
		return "", fmt.Errorf("store the client CA: %w", err)
	}
	return path, nil
}

func readClientCA(ctx context.Context, client kubernetes.Interface) ([]byte, error) {
	cm, err := client.CoreV1().ConfigMaps(auth.ClientCAConfigMapNamespace).Get(ctx, auth.ClientCAConfigMapName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	caPEM := []byte(cm.Data[auth.ClientCAConfigMapKey])
	if _, err := pki.ParseCertificates(caPEM); err != nil {
		return nil, fmt.Errorf("key %s: %w", auth.ClientCAConfigMapKey, err)
	}
	return caPEM, nil
}
