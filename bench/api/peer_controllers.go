package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// startPeerControllers runs kube-controller-manager and kube-scheduler
// against the peer's kube-apiserver, as berth server runs upstream's
// controllers and its scheduler in-process: without them the peer's
// figures would leave out the work berth's include (every controller's
// pod informer sees every create, status patch and delete). Both run as
// kubeadm starts them (all default controllers, each with its service
// account's credentials; leader election on, serving off) and are waited
// for until each holds its leader lease.
//
// kubeconfig is the admin kubeconfig the bench itself uses.
func startPeerControllers(ctx context.Context, t *target, kubeconfig []byte, binDir, pkiDir, logDir, saKeyFile string) error {
	kubeconfigFile := filepath.Join(pkiDir, "controllers.kubeconfig")
	if err := os.WriteFile(kubeconfigFile, kubeconfig, 0o600); err != nil {
		return err
	}
	kcm, err := startProcess("kube-controller-manager", filepath.Join(logDir, "kube-controller-manager.log"),
		filepath.Join(binDir, "kube-controller-manager"),
		"--kubeconfig", kubeconfigFile, "--use-service-account-credentials",
		"--service-account-private-key-file", saKeyFile, "--root-ca-file", filepath.Join(pkiDir, "server-ca.crt"),
		"--cluster-signing-cert-file", filepath.Join(pkiDir, "client-ca.crt"),
		"--cluster-signing-key-file", filepath.Join(pkiDir, "client-ca.key"),
		"--secure-port", "0")
	if err != nil {
		return err
	}
	t.procs = append(t.procs, kcm)
	scheduler, err := startProcess("kube-scheduler", filepath.Join(logDir, "kube-scheduler.log"),
		filepath.Join(binDir, "kube-scheduler"), "--kubeconfig", kubeconfigFile, "--secure-port", "0")
	if err != nil {
		return err
	}
	t.procs = append(t.procs, scheduler)
	cs, err := kubernetes.NewForConfig(t.config)
	if err != nil {
		return err
	}
	for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
		err := waitFor(ctx, 2*time.Minute, t.procs, func(ctx context.Context) error {
			l, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, lease, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
				return fmt.Errorf("lease kube-system/%s has no holder", lease)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("waiting for %s to lead: %w", lease, err)
		}
	}
	return nil
}
