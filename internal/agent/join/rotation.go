package join

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/certificate"
)

// rotation is one certificate the node keeps through CSRs that it sends
// with its own client identity (the kubeconfig the join wrote): client-go's
// certificate manager over a FileStore in DIR/pki (DIR/pki/NAME-current.pem,
// 0600), the kubelet's own rotation. The manager renews at 70–90% of the
// certificate's lifetime (jittered, so nodes joined together do not renew
// together) and as soon as the template asks for something the current
// certificate lacks; it logs through klog.
type rotation struct {
	name     string // file prefix and the manager's name in logs
	signer   string
	usages   []certificatesv1.KeyUsage
	template func() *x509.CertificateRequest // nil result: nothing to request yet
}

func (r rotation) manager(ctx *context.Context, dir string) (certificate.Manager, error) {
	store, err := certificate.NewFileStore(r.name, pkiDir(dir), pkiDir(dir), "", "")
	if err != nil {
		return nil, fmt.Errorf("%s certificate store: %w", r.name, err)
	}
	kubeconfig := KubeconfigPath(dir)
	mgr, err := certificate.NewManager(&certificate.Config{
		Name: r.name,
		Ctx:  ctx,
		// The kubeconfig names the node's current client pair, so a client
		// built from it authenticates as the node itself.
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) {
			restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return nil, err
			}
			return kubernetes.NewForConfig(restCfg)
		},
		GetTemplate:      r.template,
		Usages:           r.usages,
		SignerName:       r.signer,
		CertificateStore: store,
	})
	if err != nil {
		return nil, fmt.Errorf("%s certificate manager: %w", r.name, err)
	}
	return mgr, nil
}
