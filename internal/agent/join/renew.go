package join

import (
	"context"
	"crypto/x509"
	"log/slog"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// Renew keeps the node's client certificate fresh until ctx ends: when 70–90%
// of its lifetime has passed it sends a new CSR with a new key,
// authenticated by the current certificate, and swaps the stored pair once
// it is signed. The agent's clients read the pair from the file named in
// the kubeconfig and reload it when it changes.
func Renew(ctx context.Context, dir, nodeName string, log *slog.Logger) error {
	template := &x509.CertificateRequest{Subject: *nodeSubject(nodeName)}
	mgr, err := rotation{
		name:     pairPrefix,
		signer:   certificatesv1.KubeAPIServerClientKubeletSignerName,
		usages:   clientUsages,
		template: func() *x509.CertificateRequest { return template },
	}.manager(&ctx, dir)
	if err != nil {
		return err
	}
	if cur := mgr.Current(); cur != nil && cur.Leaf != nil {
		log.Info("node certificate is renewed at 70-90% of its lifetime", "expires", cur.Leaf.NotAfter)
	}
	mgr.Start()
	<-ctx.Done()
	mgr.Stop()
	return nil
}
