package pods

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/kubelet/podcertificate"
)

// startPodCertificates runs the kubelet's own pod certificate manager:
// for each podCertificate projection of the node's pods it makes a key,
// creates a PodCertificateRequest, waits for a signer to issue it and
// renews it from its beginRefreshAt, and podCertificatePayload hands the
// current key and chain to the volume. Its requests are watched through
// pods, the node's pod informer factory (the same spec.nodeName
// selector); the node's UID through a watch of the node alone. It stops
// with ctx or when the returned stop is called, which returns once it has.
func (m *Manager) startPodCertificates(ctx context.Context, pods informers.SharedInformerFactory) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	ownNode := informers.NewSharedInformerFactoryWithOptions(m.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", m.cfg.NodeName).String()
	}))
	issuing := podcertificate.NewIssuingManager(m.client, nodePods{m}, m.recorder,
		pods.Certificates().V1().PodCertificateRequests(), ownNode.Core().V1().Nodes(), types.NodeName(m.cfg.NodeName), m.clock)
	m.podCerts = issuing
	ownNode.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Go(func() { issuing.Run(ctx) })
	return func() {
		cancel()
		wg.Wait()
		ownNode.Shutdown()
	}
}

// nodePods is the kubelet pod manager the pod certificate manager reads
// the node's pods from: the pod informer's store.
type nodePods struct{ m *Manager }

func (p nodePods) GetPods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, obj := range p.m.store.List() {
		if pod, ok := obj.(*corev1.Pod); ok {
			out = append(out, pod)
		}
	}
	return out
}

func (p nodePods) GetPodByUID(uid types.UID) (*corev1.Pod, bool) {
	for _, pod := range p.GetPods() {
		if pod.UID == uid {
			return pod, true
		}
	}
	return nil, false
}
