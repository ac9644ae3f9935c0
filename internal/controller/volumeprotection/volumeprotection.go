// Package volumeprotection runs upstream's PersistentVolumeClaim,
// PersistentVolume and VolumeAttributesClass protection controllers
// (k8s.io/kubernetes/pkg/controller/volume/pvcprotection, pvprotection,
// vacprotection) as kube-controller-manager v1.37 does. The API server's
// StorageObjectInUseProtection admission puts the kubernetes.io/
// pvc-protection, pv-protection and vac-protection finalizers on every
// claim, volume and attributes class; these controllers remove them once
// no pod uses the claim, no claim is bound to the volume and nothing names
// the class, so deletes finish. Only the wiring is berth's.
package volumeprotection

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/volume/pvcprotection"
	"k8s.io/kubernetes/pkg/controller/volume/pvprotection"
	"k8s.io/kubernetes/pkg/controller/volume/vacprotection"

	"github.com/berth/berth/internal/informeropts"
)

// Config is what the controllers need.
type Config = informeropts.ControllerConfig

// Run runs the three controllers, one worker each (kube-controller-manager's
// setting), until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	logger := klog.FromContext(ctx).WithName("volumeprotection")
	ctx = klog.NewContext(ctx, logger)
	clients, err := cfg.ClientsFor("pvc-protection-controller", "pv-protection-controller", "volumeattributesclass-protection-controller")
	if err != nil {
		return err
	}
	factory := cfg.NewFactory()
	core := factory.Core().V1()
	claims, err := pvcprotection.NewPVCProtectionController(logger, core.PersistentVolumeClaims(), core.Pods(), clients[0])
	if err != nil {
		return fmt.Errorf("pvc protection controller: %w", err)
	}
	volumes, err := pvprotection.NewPVProtectionController(logger, core.PersistentVolumes(), clients[1])
	if err != nil {
		return fmt.Errorf("pv protection controller: %w", err)
	}
	classes, err := vacprotection.NewVACProtectionController(logger, clients[2], core.PersistentVolumeClaims(), core.PersistentVolumes(),
		factory.Storage().V1().VolumeAttributesClasses())
	if err != nil {
		return fmt.Errorf("volume attributes class protection controller: %w", err)
	}
	return informeropts.RunControllers(ctx, factory, cfg.Logger,
		informeropts.Workers(claims.Run, 1), informeropts.Workers(volumes.Run, 1), informeropts.Workers(classes.Run, 1))
}
