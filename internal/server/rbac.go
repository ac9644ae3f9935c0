package server

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/berth/berth/internal/auth/inprocess"
	"github.com/berth/berth/internal/auth/rbac"
	"github.com/berth/berth/internal/pki"
)

// rbacPolicy is RBAC's part of the server: the objects' informers (over a
// loopback client as system:apiserver), the authorizer deciding from them,
// and the default roles created once the API serves.
type rbacPolicy struct {
	cfg        Config
	informers  *rbac.Informers
	Authorizer authorizer.Authorizer
	ensure     func(context.Context) error
	// defaultsHeld closes once the default policy is in place and the
	// authorizer's cache holds it.
	defaultsHeld chan struct{}
}

func newRBACPolicy(cfg Config, lb *inprocess.Loopback) (*rbacPolicy, error) {
	client, err := loopbackClient(lb, pki.APIServerClientIdentity)
	if err != nil {
		return nil, fmt.Errorf("rbac: %w", err)
	}
	in := rbac.NewInformers(client)
	log := cfg.Logger.With("component", "rbac")
	return &rbacPolicy{
		cfg:          cfg,
		informers:    in,
		Authorizer:   rbac.NewAuthorizer(in.Listers, in.HasSynced),
		ensure:       func(ctx context.Context) error { return rbac.EnsureDefaults(ctx, client, log) },
		defaultsHeld: make(chan struct{}),
	}, nil
}

// EscalationCheck refuses RBAC writes granting more than their author
// holds; authz is the server's whole chain (asked for escalate and bind).
func (p *rbacPolicy) EscalationCheck(authz authorizer.Authorizer) admission.ValidationInterface {
	return rbac.NewEscalationCheck(p.informers.Listers, authz)
}

// start runs the informers until ctx ends and creates the default roles
// (retrying until the API answers); wait returns once both are done.
func (p *rbacPolicy) start(ctx context.Context) (wait func()) {
	informersDone, defaultsDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(informersDone)
		p.informers.Run(ctx)
	}()
	go func() {
		defer close(defaultsDone)
		p.ensureDefaults(ctx)
	}()
	return func() { <-informersDone; <-defaultsDone }
}

func (p *rbacPolicy) ensureDefaults(ctx context.Context) {
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := p.ensure(ctx); err != nil {
			p.cfg.Logger.Warn("default RBAC roles not yet in place; retrying", "err", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if ctx.Err() == nil {
			p.cfg.Logger.Error("default RBAC roles", "err", err)
		}
		return
	}
	defaults := rbac.DefaultPolicy()
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return p.informers.Hold(defaults), nil
	})
	if err == nil {
		close(p.defaultsHeld)
	}
}
