package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
//
// A controller's first client also creates its ServiceAccount when it is
// missing, as upstream's client builder does, as the controller manager:
// the accounts the controllers act as are there to be listed and described.
type controllerClients struct {
	lb *inprocess.Loopback
	// accounts are the names whose ServiceAccount is known to exist.
	accounts sync.Map
}

var _ informeropts.Clients = (*controllerClients)(nil)

func newControllerClients(lb *inprocess.Loopback) *controllerClients {
	return &controllerClients{lb: lb}
}

// accountTimeout bounds the ServiceAccount's creation: the controller
// fails and is restarted with back-off rather than wait on a stuck server.
const accountTimeout = 30 * time.Second

func (c *controllerClients) Config(name string) (*rest.Config, error) {
	if err := c.ensureAccount(name); err != nil {
		return nil, err
	}
	account := serviceaccount.UserInfo(metav1.NamespaceSystem, name, "")
	u := &user.DefaultInfo{Name: account.GetName(), Groups: account.GetGroups()}
	// client-go's AddUserAgent, as the controller manager's client builder.
	return loopbackConfigAs(c.lb, u, loopbackUserAgent(pki.ControllerIdentity)+"/"+name)
}

func (c *controllerClients) Client(name string) (kubernetes.Interface, error) {
	cfg, err := c.Config(name)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// metadata is a metadata-only client as the controller called name.
func (c *controllerClients) metadata(name string) (metadata.Interface, error) {
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

// ensureAccount creates kube-system/name unless it exists, once per name.
func (c *controllerClients) ensureAccount(name string) error {
	if _, ok := c.accounts.Load(name); ok {
		return nil
	}
	manager, err := loopbackClient(c.lb, pki.ControllerIdentity)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), accountTimeout)
	defer cancel()
	accounts := manager.CoreV1().ServiceAccounts(metav1.NamespaceSystem)
	if _, err := accounts.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name}}
		if _, err := accounts.Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("service account kube-system/%s: %w", name, err)
		}
	} else if err != nil {
		return fmt.Errorf("service account kube-system/%s: %w", name, err)
	}
	c.accounts.Store(name, struct{}{})
	return nil
}
