package pods

import (
	"context"
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
	"k8s.io/kubernetes/pkg/kubelet/envvars"
)

// serviceEnv gives containers the kubelet's service environment variables
// (KUBERNETES_SERVICE_HOST and the rest, docker-link style) from a watch of
// every Service, as the kubelet's service lister does.
type serviceEnv struct {
	lister corelisters.ServiceLister
	synced cache.InformerSynced
}

// watchServices starts the Service informer; it stops when ctx ends, and
// wait returns once it has.
func watchServices(ctx context.Context, client kubernetes.Interface) (env *serviceEnv, wait func()) {
	factory := informers.NewSharedInformerFactory(client, 0)
	services := factory.Core().V1().Services()
	env = &serviceEnv{lister: services.Lister(), synced: services.Informer().HasSynced}
	factory.Start(ctx.Done())
	return env, factory.Shutdown
}

// errServicesNotRead is the kubelet's refusal to start a container before
// the Services are known: its KUBERNETES_SERVICE_HOST would be missing.
var errServicesNotRead = errors.New("services have not yet been read at least once, cannot construct envvars")

// forPod returns the service variables of a pod in namespace ns: those of
// default/kubernetes always, and with enableServiceLinks those of every
// Service of ns that has a cluster IP (one of ns overriding default's
// kubernetes). The kubelet's getServiceEnvVarMap; the variables themselves
// are upstream's (envvars.FromServices).
func (s *serviceEnv) forPod(ns string, enableServiceLinks bool) (map[string]string, error) {
	if s == nil {
		return nil, nil
	}
	if !s.synced() {
		return nil, errServicesNotRead
	}
	all, err := s.lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	byName := map[string]*corev1.Service{}
	for _, svc := range all {
		switch {
		case !v1helper.IsServiceIPSet(svc):
		case svc.Namespace == metav1.NamespaceDefault && svc.Name == "kubernetes":
			if _, ok := byName[svc.Name]; !ok {
				byName[svc.Name] = svc
			}
		case svc.Namespace == ns && enableServiceLinks:
			byName[svc.Name] = svc
		}
	}
	// Sorted, so the variables come in the same order every time.
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	slices.Sort(names)
	services := make([]*corev1.Service, len(names))
	for i, name := range names {
		services[i] = byName[name]
	}
	out := map[string]string{}
	for _, e := range envvars.FromServices(services) {
		out[e.Name] = e.Value
	}
	return out, nil
}
