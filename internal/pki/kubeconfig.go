package pki

import (
	"fmt"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigData is a complete client configuration for one identity.
type KubeconfigData struct {
	Server   string // https://host:port
	CAPEM    []byte // the server CA to trust
	CertPEM  []byte // client certificate (may be empty with Token)
	KeyPEM   []byte
	Token    string
	UserName string // the kubeconfig's user entry name
}

// Kubeconfig renders d as a kubeconfig with one cluster, user and context.
func Kubeconfig(d KubeconfigData) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["berth"] = &clientcmdapi.Cluster{Server: d.Server, CertificateAuthorityData: d.CAPEM}
	cfg.AuthInfos[d.UserName] = &clientcmdapi.AuthInfo{ClientCertificateData: d.CertPEM, ClientKeyData: d.KeyPEM, Token: d.Token}
	cfg.Contexts["berth"] = &clientcmdapi.Context{Cluster: "berth", AuthInfo: d.UserName}
	cfg.CurrentContext = "berth"
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("render kubeconfig: %w", err)
	}
	return out, nil
}

// ClientKubeconfig issues a fresh client certificate for id from the client
// CA and renders a kubeconfig for it against server.
func (c *Cluster) ClientKubeconfig(server string, id Identity) ([]byte, error) {
	certPEM, keyPEM, err := c.ClientCA.Issue(id)
	if err != nil {
		return nil, err
	}
	return Kubeconfig(KubeconfigData{Server: server, CAPEM: c.ServerCA.CertPEM, CertPEM: certPEM, KeyPEM: keyPEM, UserName: id.CommonName})
}

// KubeconfigMatches reports whether an existing kubeconfig still points at
// server with a client certificate from clientCA that is not about to expire,
// so restarts keep handing out the same file.
func KubeconfigMatches(data []byte, server string, clientCA *CA) bool {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return false
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		return false
	}
	if cfg.Clusters[ctx.Cluster].Server != server {
		return false
	}
	certs, err := ParseCertificates(cfg.AuthInfos[ctx.AuthInfo].ClientCertificateData)
	if err != nil {
		return false
	}
	return certs[0].CheckSignatureFrom(clientCA.Cert) == nil && time.Until(certs[0].NotAfter) > renewBefore
}
