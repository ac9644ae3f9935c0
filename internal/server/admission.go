package server

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"

	"github.com/berth/berth/internal/admission/internalform"
	"github.com/berth/berth/internal/admission/podsecurity"
	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/informeropts"
	"github.com/berth/berth/internal/pki"
)

// admissionPlugins are the admission plugins that read the cluster:
// kube-apiserver's ServiceAccount plugin (upstream's own, on the internal
// form) and PodSecurity. Their informers come from one factory whose
// informers read through to the watch cache (LocalReads) once the API
// server exists, and list only once started, after it.
type admissionPlugins struct {
	factory        informers.SharedInformerFactory
	serviceAccount admission.Interface
	podSecurity    *podsecurity.Plugin
}

func newAdmissionPlugins(cfg Config, lb *inprocess.Loopback, local *apiserver.LocalReads, reg prometheus.Registerer) (*admissionPlugins, error) {
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("admission plugins: %w", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informeropts.Factory()...)
	informeropts.ReadThrough(factory, &corev1.ServiceAccount{}, localOnceServed(local, "serviceaccounts"))
	sa := serviceaccount.NewServiceAccount()
	sa.SetExternalKubeClientSet(client)
	sa.SetExternalKubeInformerFactory(factory)
	if err := sa.ValidateInitialization(); err != nil {
		return nil, fmt.Errorf("admission plugin %s: %w", serviceaccount.PluginName, err)
	}
	ps, err := newPodSecurity(cfg, factory, local, client, reg)
	if err != nil {
		return nil, err
	}
	return &admissionPlugins{factory: factory, serviceAccount: internalform.Wrap(sa), podSecurity: ps}, nil
}

// chain runs the plugins with berth's own, in kube-apiserver's order:
// ServiceAccount (defaults the account, checks it exists, mounts
// kube-api-access-*), NodeRestriction, PodSecurity (so it judges the pod as
// it will run), then RBAC's escalation check.
func (p *admissionPlugins) chain(nodeRestriction, escalation admission.Interface) admission.Interface {
	return admission.NewChainHandler(p.serviceAccount, nodeRestriction, p.podSecurity, escalation)
}

// start runs the informers until ctx ends; wait returns once they have stopped.
func (p *admissionPlugins) start(ctx context.Context) (wait func()) {
	p.factory.Start(ctx.Done())
	return p.factory.Shutdown
}
