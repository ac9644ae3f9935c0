package join

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/certificate"
)

// Renew keeps the node's client certificate fresh until ctx ends: when 70–90%
// of its lifetime has passed (jittered, so nodes joined together do not
// renew together) it sends a new CSR with a new key, authenticated by the
// current certificate, and swaps the stored pair once it is signed. The
// agent's clients read the pair from the file named in the kubeconfig and
// reload it when it changes. This is client-go's certificate manager, the
// kubelet's own rotation.
func Renew(ctx context.Context, dir, nodeName string, log *slog.Logger) error {
	store, err := certificate.NewFileStore(pairPrefix, pkiDir(dir), pkiDir(dir), "", "")
	if err != nil {
		return fmt.Errorf("node certificate store: %w", err)
	}
	kubeconfig := KubeconfigPath(dir)
	// The manager logs through klog (rotation deadlines, CSR waits); its
	// outcome is logged here.
	mgr, err := certificate.NewManager(&certificate.Config{
		Name: "node-client",
		Ctx:  &ctx,
		// The current certificate is the one the kubeconfig names, so a
		// client built from it authenticates as the node itself.
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) {
			restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return nil, err
			}
			return kubernetes.NewForConfig(restCfg)
		},
		Template:         &x509.CertificateRequest{Subject: *nodeSubject(nodeName)},
		Usages:           clientUsages,
		SignerName:       certificatesv1.KubeAPIServerClientKubeletSignerName,
		CertificateStore: store,
	})
	if err != nil {
		return fmt.Errorf("certificate manager: %w", err)
	}
	if cur := mgr.Current(); cur != nil && cur.Leaf != nil {
		log.Info("node certificate is renewed at 70-90% of its lifetime", "expires", cur.Leaf.NotAfter)
	}
	mgr.Start()
	<-ctx.Done()
	mgr.Stop()
	return nil
}
