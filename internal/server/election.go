package server

import (
	"context"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/leader"
)

// electsLeaders says whether control loops must win a Lease before they run.
// Replicas can share only an external etcd; an embedded member belongs to
// one process (its data directory is locked), so there is no one to elect against.
func (c *Config) electsLeaders() bool { return len(c.EtcdServers) > 0 }

// failedLeaderPause keeps a component that keeps failing from cycling its
// lease in a tight loop.
const failedLeaderPause = leader.DefaultRetryPeriod

// elected runs comp only while this replica (identity) holds the Lease
// kube-system/berth-<component>; one Lease per component lets replicas
// share the work. A component that fails hands its Lease on.
func elected(cfg Config, comp component, identity string) func(context.Context, kubernetes.Interface) error {
	return func(ctx context.Context, client kubernetes.Interface) error {
		log := cfg.Logger.With("component", comp.name)
		return leader.Run(ctx, leader.Config{Client: client, Name: "berth-" + comp.name, Identity: identity, Logger: log},
			func(ctx context.Context) {
				if err := comp.run(ctx, client); err != nil && ctx.Err() == nil {
					log.Error("component stopped; handing its lease on", "err", err)
					select {
					case <-ctx.Done():
					case <-time.After(failedLeaderPause):
					}
				}
			})
	}
}
