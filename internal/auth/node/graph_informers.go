package node

import (
	"context"
	"errors"
	"log/slog"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/berth/berth/internal/informeropts"
)

// Run keeps g current from informers on pods and CSRs through client (the
// API server's own loopback identity) until ctx ends; podSource, when not nil,
// is where pods are listed and watched instead (the server's watch cache).
// The graph reports synced once both informers have listed.
func (g *Graph) Run(ctx context.Context, client kubernetes.Interface, podSource cache.ListerWatcher, log *slog.Logger) error {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informeropts.Factory()...)
	informeropts.ReadThrough(factory, &corev1.Pod{}, podSource)
	pods := factory.Core().V1().Pods().Informer()
	if err := pods.SetTransform(keepGraphParts); err != nil {
		return err
	}
	csrs := factory.Certificates().V1().CertificateSigningRequests().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { g.podChanged(obj) },
		UpdateFunc: func(_, obj any) { g.podChanged(obj) },
		DeleteFunc: func(obj any) { g.podGone(obj) },
	}); err != nil {
		return err
	}
	if _, err := csrs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { g.csrChanged(obj) },
		UpdateFunc: func(_, obj any) { g.csrChanged(obj) },
		DeleteFunc: func(obj any) { g.csrGone(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, csrs.HasSynced) {
		return errors.New("node authorizer graph: informers did not sync")
	}
	g.MarkSynced()
	log.Info("node authorizer graph synced")
	<-ctx.Done()
	return nil
}

func (g *Graph) podChanged(obj any) {
	if r, ok := obj.(*podRecord); ok {
		g.setPod(podKey{r.Namespace, r.Name}, r.bound)
	}
}

func (g *Graph) podGone(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if r, ok := obj.(*podRecord); ok {
		g.DeletePod(r.Namespace, r.Name)
	}
}

func (g *Graph) csrChanged(obj any) {
	if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
		g.SetCSR(csr)
	}
}

func (g *Graph) csrGone(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
		g.DeleteCSR(csr.Name)
	}
}
