package server

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/informeropts"
	"github.com/berth/berth/internal/pki"
)

// controllerClients gives each of upstream's controllers its own identity,
// as kube-controller-manager's --use-service-account-credentials does: the
// controller called NAME acts as system:serviceaccount:kube-system:NAME,
// which upstream's default policy binds to the system:controller:NAME role
// (internal/auth/rbac), so it holds what that role grants and no more. The
// clients are in-process (no token); informers stay with the controller
// manager's own identity, as kube-controller-manager's shared informers.
type controllerClients struct{ lb *inprocess.Loopback }

var _ informeropts.Clients = controllerClients{}

func (c controllerClients) Config(name string) (*rest.Config, error) {
	account := serviceaccount.UserInfo(metav1.NamespaceSystem, name, "")
	u := &user.DefaultInfo{Name: account.GetName(), Groups: account.GetGroups()}
	// client-go's AddUserAgent, as the controller manager's client builder.
	return loopbackConfigAs(c.lb, u, loopbackUserAgent(pki.ControllerIdentity)+"/"+name)
}

func (c controllerClients) Client(name string) (kubernetes.Interface, error) {
	cfg, err := c.Config(name)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// metadata is a metadata-only client as the controller called name.
func (c controllerClients) metadata(name string) (metadata.Interface, error) {
	cfg, err := c.Config(name)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata client for %s: %w", name, err)
	}
	return meta, nil
}
