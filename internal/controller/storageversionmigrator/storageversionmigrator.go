// Package storageversionmigrator runs upstream's storage version migrator
// (k8s.io/kubernetes/pkg/controller/storageversionmigrator) as
// kube-controller-manager v1.37 does: for each StorageVersionMigration it
// waits until the garbage collector's monitor of the resource has seen the
// resourceVersion the migration started at, rewrites every object the
// monitor holds with an empty patch (the server stores it again in the
// storage version), and reports Running, then Succeeded or Failed; for a
// custom resource it then trims the CRD's status.storedVersions. Its three
// controllers read the garbage collector's graph builder, so it runs in
// the collector's component. Only the wiring is berth's.
package storageversionmigrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
	svm "k8s.io/kubernetes/pkg/controller/storageversionmigrator"
	"k8s.io/kubernetes/pkg/features"

	"github.com/berth/berth/internal/informeropts"
)

// Name is the controller's, and its service account's, as
// kube-controller-manager names them.
const Name = "storage-version-migrator-controller"

// Config is what the migrator needs.
type Config struct {
	informeropts.ControllerConfig
	// GraphBuilder is the running garbage collector's, whose monitors hold
	// every object of each resource.
	GraphBuilder *garbagecollector.GraphBuilder
	// Mapper maps kinds to resources; the collector's, which it resets.
	Mapper meta.ResettableRESTMapper
}

// Run runs the migrator until ctx ends. With the feature gates it needs
// off, it runs nothing, as kube-controller-manager skips it.
func Run(ctx context.Context, cfg Config) error {
	on, err := enabled()
	if err != nil {
		return fmt.Errorf("storage version migrator: %w", err)
	}
	if !on {
		logger(cfg).Info("storage version migrator not run: a feature gate it needs is off")
		return nil
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName(Name))
	c, err := newClients(cfg)
	if err != nil {
		return fmt.Errorf("storage version migrator: %w", err)
	}
	factory := cfg.NewFactory()
	migrations := factory.Storagemigration().V1().StorageVersionMigrations()
	return informeropts.RunControllers(ctx, factory, cfg.Logger,
		svm.NewSVMController(ctx, c.kube, c.dynamic, migrations, Name, cfg.Mapper, cfg.GraphBuilder).Run,
		svm.NewResourceVersionController(ctx, c.kube, c.discovery, c.metadata, migrations, cfg.Mapper).Run,
		svm.NewCustomResourceController(ctx, c.kube, migrations, c.crds.ApiextensionsV1().CustomResourceDefinitions()).Run,
	)
}

// enabled checks the gates as kube-controller-manager does: without
// StorageVersionMigrator or InformerResourceVersion the migrator is off,
// and without InOrderInformers it is an error.
func enabled() (bool, error) {
	gates := clientgofeatures.FeatureGates()
	if !utilfeature.DefaultFeatureGate.Enabled(features.StorageVersionMigrator) || !gates.Enabled(clientgofeatures.InformerResourceVersion) {
		return false, nil
	}
	if !gates.Enabled(clientgofeatures.InOrderInformers) {
		return false, errors.New("storage version migrator requires the InOrderInformers feature gate")
	}
	return true, nil
}

func logger(cfg Config) *slog.Logger {
	if cfg.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return cfg.Logger
}

// clients are the migrator's, all acting as its service account.
type clients struct {
	kube      kubernetes.Interface
	dynamic   *dynamic.DynamicClient
	discovery discovery.DiscoveryInterface
	metadata  metadata.Interface
	crds      apiextensionsclientset.Interface
}

func newClients(cfg Config) (*clients, error) {
	kube, err := cfg.ClientFor(Name)
	if err != nil {
		return nil, err
	}
	if cfg.Clients == nil {
		return nil, errors.New("no service account clients to act with")
	}
	rc, err := cfg.Clients.Config(Name)
	if err != nil {
		return nil, err
	}
	c := &clients{kube: kube}
	if c.dynamic, err = dynamic.NewForConfig(rc); err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	if c.discovery, err = discovery.NewDiscoveryClientForConfig(rc); err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	if c.metadata, err = metadata.NewForConfig(rc); err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	if c.crds, err = apiextensionsclientset.NewForConfig(rc); err != nil {
		return nil, fmt.Errorf("apiextensions client: %w", err)
	}
	return c, nil
}
