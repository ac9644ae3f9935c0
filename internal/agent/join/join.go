// Package join gives a node agent its identity: with a join token it checks
// the server against the token's CA pin, sends a CertificateSigningRequest
// for system:node:NAME with a key generated here (the key never leaves the
// node), waits for the server to approve and sign it, and writes the
// certificate and a kubeconfig that the agent uses from then on. The Renewer
// replaces the certificate before it expires, authenticated by the current
// one. This is the kubelet's TLS bootstrap and client certificate rotation,
// built on the same client-go pieces (util/certificate, util/certificate/csr).
package join

import (
	"cmp"
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/certificate/csr"

	"github.com/berth/berth/internal/atomicfile"
	"github.com/berth/berth/internal/auth/bootstraptoken"
	"github.com/berth/berth/internal/pki"
)

// Config says where to join and what to keep.
type Config struct {
	Server   string                    // https://HOST:PORT
	Token    *bootstraptoken.JoinToken // nil: only an existing certificate may be used
	NodeName string
	Dir      string // the agent's data directory; files go under Dir/pki and Dir/node.kubeconfig
	Logger   *slog.Logger
	// TokenSettle bounds how long 401 and 403 are retried (0: defaultSettle).
	TokenSettle time.Duration
}

// Files the join leaves in Dir, all 0600.
const (
	pairPrefix     = "node-client" // Dir/pki/node-client-current.pem: certificate and key
	kubeconfigName = "node.kubeconfig"
)

// KubeconfigPath is the kubeconfig the agent uses once joined.
func KubeconfigPath(dir string) string { return filepath.Join(dir, kubeconfigName) }

func pkiDir(dir string) string { return filepath.Join(dir, "pki") }

// Usages a node client certificate is requested with (ECDSA key: no key
// encipherment), as the kubelet does.
var clientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

// nodeSubject is the identity the Node authorizer recognizes.
func nodeSubject(name string) *pkix.Name {
	id := pki.NodeIdentity(name)
	return &pkix.Name{CommonName: id.CommonName, Organization: id.Organizations}
}

// Ensure returns the path of a kubeconfig with a valid certificate for the
// node, joining first when there is none (first start, or a certificate
// that expired while the agent was down). A restart with a valid
// certificate does not use the token at all.
func Ensure(ctx context.Context, cfg Config) (string, error) {
	store, err := certificate.NewFileStore(pairPrefix, pkiDir(cfg.Dir), pkiDir(cfg.Dir), "", "")
	if err != nil {
		return "", fmt.Errorf("node certificate store: %w", err)
	}
	kubeconfig := KubeconfigPath(cfg.Dir)
	if reason := usable(store, kubeconfig, cfg.NodeName); reason == "" {
		cfg.Logger.Info("using the node certificate from an earlier join", "kubeconfig", kubeconfig)
		return kubeconfig, nil
	} else if cfg.Token == nil {
		return "", fmt.Errorf("no usable node certificate in %s (%s) and no --token to join with", cfg.Dir, reason)
	}
	if err := join(ctx, cfg, store); err != nil {
		return "", err
	}
	return kubeconfig, nil
}

// usable returns "" when the stored certificate and kubeconfig can be used,
// otherwise why not.
func usable(store certificate.FileStore, kubeconfig, nodeName string) string {
	cert, err := store.Current()
	if err != nil {
		return "no certificate"
	}
	switch {
	case cert.Leaf == nil:
		return "unreadable certificate"
	case cert.Leaf.Subject.CommonName != nodeSubject(nodeName).CommonName:
		return "certificate is for " + cert.Leaf.Subject.CommonName
	case !time.Now().Before(cert.Leaf.NotAfter):
		return "certificate expired at " + cert.Leaf.NotAfter.UTC().Format(time.RFC3339)
	}
	if _, err := os.Stat(kubeconfig); err != nil {
		return "no kubeconfig"
	}
	return ""
}

func join(ctx context.Context, cfg Config, store certificate.FileStore) error {
	log := cfg.Logger.With("server", cfg.Server, "tokenID", cfg.Token.ID())
	caPEM, err := DiscoverCA(ctx, cfg.Server, cfg.Token.CAHash)
	if err != nil {
		return err
	}
	log.Info("server CA matches the join token's pin", "caHash", cfg.Token.CAHash)
	client, err := kubernetes.NewForConfig(&rest.Config{
		Host: cfg.Server, BearerToken: cfg.Token.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
	})
	if err != nil {
		return fmt.Errorf("bootstrap client: %w", err)
	}
	key, keyPEM, err := pki.NewKeyPEM()
	if err != nil {
		return err
	}
	request, err := certutil.MakeCSR(key, nodeSubject(cfg.NodeName), nil, nil)
	if err != nil {
		return fmt.Errorf("make CSR: %w", err)
	}
	name, uid, err := requestWithFreshToken(ctx, client, request, key, cmp.Or(cfg.TokenSettle, defaultSettle), log)
	if err != nil {
		return err
	}
	log.Info("waiting for the CSR to be approved and signed", "csr", name)
	certPEM, err := csr.WaitForCertificate(ctx, client, name, uid)
	if err != nil {
		return fmt.Errorf("CSR %s: %w", name, err)
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return fmt.Errorf("store node certificate: %w", err)
	}
	if err := writeKubeconfig(cfg, caPEM, store.CurrentPath()); err != nil {
		return err
	}
	log.Info("joined", "node", cfg.NodeName, "kubeconfig", KubeconfigPath(cfg.Dir))
	return nil
}

// defaultSettle bounds how long 401 and 403 are retried. The server learns of a
// new token, and of its default RBAC bindings at first start, through
// watches, so a token used the moment it is created may be refused for an
// instant. After that, 401 means the token is wrong, expired or deleted, and
// 403 that bootstrappers may not request certificates.
const defaultSettle = 30 * time.Second

func requestWithFreshToken(ctx context.Context, client kubernetes.Interface, request []byte, key any, settle time.Duration, log *slog.Logger) (string, types.UID, error) {
	deadline := time.Now().Add(settle)
	for {
		name, uid, err := csr.RequestCertificateWithContext(ctx, client, request, "",
			certificatesv1.KubeAPIServerClientKubeletSignerName, nil, clientUsages, key)
		switch {
		case err == nil:
			log.Info("CSR sent", "csr", name)
			return name, uid, nil
		case !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err):
			return "", "", fmt.Errorf("send CSR: %w", err)
		case time.Now().After(deadline) && apierrors.IsUnauthorized(err):
			return "", "", errors.New("the server refused the join token (unknown, expired or deleted): 401 Unauthorized")
		case time.Now().After(deadline):
			return "", "", fmt.Errorf("the server does not let this join token request a node certificate (bind the system:node-bootstrapper role to system:bootstrappers): %w", err)
		}
		select {
		case <-ctx.Done():
			return "", "", ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// writeKubeconfig points the agent at the server, trusting the pinned CA,
// with the certificate store's current pair: the file the Renewer replaces,
// which client-go reloads.
func writeKubeconfig(cfg Config, caPEM []byte, pairPath string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["berth"] = &clientcmdapi.Cluster{Server: cfg.Server, CertificateAuthorityData: caPEM}
	kc.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificate: pairPath, ClientKey: pairPath}
	kc.Contexts["berth"] = &clientcmdapi.Context{Cluster: "berth", AuthInfo: "node"}
	kc.CurrentContext = "berth"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("render node kubeconfig: %w", err)
	}
	return atomicfile.WriteFile(KubeconfigPath(cfg.Dir), data, 0o600)
}
