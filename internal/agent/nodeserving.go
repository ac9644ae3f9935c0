package agent

import (
	"context"
	"crypto/tls"

	"github.com/berth/berth/internal/agent/join"
	"github.com/berth/berth/internal/agent/node"
	"github.com/berth/berth/internal/agent/nodeserver"
)

// prepareJoinedNodeServer gives a token-joined agent started without
// --tls-cert-file its node server's identity, as the kubelet with
// --rotate-server-certificates: the API server's client CA, which the API
// server publishes, and a serving certificate of its own for the addresses
// its Node reports, through a kubelet-serving CSR (internal/agent/join),
// renewed in the background until ctx ends.
func (a *Agent) prepareJoinedNodeServer(ctx context.Context) error {
	caFile, err := join.FetchClientCA(ctx, a.client, a.cfg.DataDir, a.log)
	if err != nil {
		return err
	}
	facts, err := a.facts()
	if err != nil {
		return err
	}
	serving, err := join.NewServing(ctx, a.cfg.DataDir, a.cfg.NodeName, a.log.With("component", "serving-certificate"))
	if err != nil {
		return err
	}
	serving.SetAddresses(node.Observation{Facts: facts}.Status().Addresses)
	serving.Start()
	a.serving, a.servingClientCA = serving, caFile
	return nil
}

// nodeServerTLS is the node server's TLS: the pair given by --tls-cert-file,
// or a joined node's own rotating certificate; nil when the node server is off.
func (a *Agent) nodeServerTLS() (*tls.Config, error) {
	switch {
	case a.cfg.TLSCertFile != "":
		return nodeserver.TLSConfig(a.cfg.TLSCertFile, a.cfg.TLSPrivateKeyFile, a.cfg.ClientCAFile)
	case a.serving != nil:
		return nodeserver.RotatingTLSConfig(a.serving.GetCertificate, a.servingClientCA)
	}
	a.log.Warn("node server off: no --tls-cert-file and not joined with a token; kubectl logs and exec will not reach this node")
	return nil, nil
}
