package clusterdns

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fixedClientConfig is clientcmd.ClientConfig for one ready rest.Config: the
// only way into the kubernetes plugin for a client that is not described by
// a kubeconfig file (the in-process one dials through a socket pair).
type fixedClientConfig struct{ config *rest.Config }

var _ clientcmd.ClientConfig = fixedClientConfig{}

func (f fixedClientConfig) ClientConfig() (*rest.Config, error) {
	return rest.CopyConfig(f.config), nil
}

func (f fixedClientConfig) RawConfig() (clientcmdapi.Config, error) {
	return clientcmdapi.Config{}, nil
}

func (f fixedClientConfig) Namespace() (string, bool, error) { return "default", false, nil }

func (f fixedClientConfig) ConfigAccess() clientcmd.ConfigAccess { return nil }
