package server

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/berth/berth/internal/apiserver"
	"github.com/berth/berth/internal/controller/garbagecollector"
	"github.com/berth/berth/internal/controller/storageversionmigrator"
	"github.com/berth/berth/internal/informeropts"
	"github.com/berth/berth/internal/pki"
)

// garbageCollectorName is the collector's service account, as
// kube-controller-manager names it.
const garbageCollectorName = "generic-garbage-collector"

// garbageCollector is the garbage collector and the storage version
// migrator, which reads the collector's monitors: one component, under one
// leader election, as kube-controller-manager runs them. While it runs, the
// collector's dependency graph is served at
// /debug/controllers/garbagecollector/graph.
func (c *Config) garbageCollector(clients *controllerClients, local *apiserver.LocalReads, debug *apiserver.ControllerDebug) component {
	return component{name: "garbage-collector", identity: pki.ControllerIdentity, run: func(ctx context.Context, client kubernetes.Interface) error {
		gc, err := c.newGarbageCollector(ctx, clients, local)
		if err != nil {
			return err
		}
		defer debug.Set("garbagecollector", gc.DebuggingHandler())()
		migrator := storageversionmigrator.Config{
			ControllerConfig: informeropts.ControllerConfig{Client: client, Clients: clients, Logger: c.Logger.With("component", storageversionmigrator.Name)},
			GraphBuilder:     gc.GraphBuilder(), Mapper: gc.Mapper(),
		}
		var wg sync.WaitGroup
		var gcErr, svmErr error
		wg.Go(func() { gcErr = gc.Run(ctx) })
		wg.Go(func() { svmErr = storageversionmigrator.Run(ctx, migrator) })
		wg.Wait()
		return errors.Join(gcErr, svmErr)
	}}
}

// newGarbageCollector builds the collector, which lists, watches and
// deletes as its service account, as upstream's does, and reads the watch
// cache of what the controller manager may read.
func (c *Config) newGarbageCollector(ctx context.Context, clients *controllerClients, local *apiserver.LocalReads) (*garbagecollector.Controller, error) {
	client, err := clients.Client(garbageCollectorName)
	if err != nil {
		return nil, fmt.Errorf("garbage collector client: %w", err)
	}
	meta, err := clients.metadata(garbageCollectorName)
	if err != nil {
		return nil, fmt.Errorf("garbage collector metadata client: %w", err)
	}
	localMetadata := func(ctx context.Context, gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
		return local.MetadataListWatch(ctx, authenticatedUser(pki.ControllerIdentity), gvr)
	}
	return garbagecollector.New(ctx, garbagecollector.Config{
		Client: client, Metadata: meta, LocalMetadata: localMetadata,
		Logger: c.Logger.With("component", "garbage-collector"),
	})
}
