package rbac

import (
	"context"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/berth/berth/internal/informeropts"
)

// Informers keeps the RBAC objects current from the API, for the
// authorizer and the escalation check.
type Informers struct {
	factory informers.SharedInformerFactory
	Listers Listers
	synced  []cache.InformerSynced
}

// NewInformers watches the four RBAC kinds through client (the server's
// own loopback identity). Nothing is fetched until Run.
func NewInformers(client kubernetes.Interface) *Informers {
	// No periodic resync: the watch keeps the cache current, and a resync
	// would only replay the cache to handlers, which there are none of.
	f := informers.NewSharedInformerFactoryWithOptions(client, 0*time.Second, informeropts.Factory()...)
	rbac := f.Rbac().V1()
	in := &Informers{factory: f, Listers: Listers{
		Roles: rbac.Roles().Lister(), RoleBindings: rbac.RoleBindings().Lister(),
		ClusterRoles: rbac.ClusterRoles().Lister(), ClusterRoleBindings: rbac.ClusterRoleBindings().Lister(),
	}}
	for _, inf := range []cache.SharedIndexInformer{rbac.Roles().Informer(), rbac.RoleBindings().Informer(),
		rbac.ClusterRoles().Informer(), rbac.ClusterRoleBindings().Informer()} {
		in.synced = append(in.synced, inf.HasSynced)
	}
	return in
}

// HasSynced reports whether every informer has its initial list.
func (in *Informers) HasSynced() bool {
	for _, s := range in.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Run watches until ctx ends and returns once every informer has stopped.
func (in *Informers) Run(ctx context.Context) {
	in.factory.Start(ctx.Done())
	<-ctx.Done()
	in.factory.Shutdown()
}

// Hold reports whether the informers have synced and hold every role and
// binding of p: until then, who is granted only through them (the
// controllers) would be refused.
func (in *Informers) Hold(p *Policy) bool {
	if !in.HasSynced() {
		return false
	}
	for i := range p.ClusterRoles {
		if _, err := in.Listers.ClusterRoles.Get(p.ClusterRoles[i].Name); err != nil {
			return false
		}
	}
	for i := range p.ClusterRoleBindings {
		if _, err := in.Listers.ClusterRoleBindings.Get(p.ClusterRoleBindings[i].Name); err != nil {
			return false
		}
	}
	for ns, roles := range p.Roles {
		for i := range roles {
			if _, err := in.Listers.Roles.Roles(ns).Get(roles[i].Name); err != nil {
				return false
			}
		}
	}
	for ns, bindings := range p.RoleBindings {
		for i := range bindings {
			if _, err := in.Listers.RoleBindings.RoleBindings(ns).Get(bindings[i].Name); err != nil {
				return false
			}
		}
	}
	return true
}
