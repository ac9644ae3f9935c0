package scheduler

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
)

// informerCheckEvery is how many sweeps pass between informer checks: a
// list of every unbound pod from the API server every 5 minutes, which
// costs little once pods are bound and is bounded while many wait.
const informerCheckEvery = 10

// checkInformer looks for the one way the sweep cannot see a lost pod: the
// pod informer never delivered it, so neither the lister nor the queue
// knows it. It lists the unbound pods from the API server (a consistent
// read) and warns about each of this scheduler's pending pods that the
// informer lacked on two checks in a row (one check could just be ahead of
// the watch). It only reports: the fault is in the watch path, and the
// warning is the evidence to find it. It returns the pods absent this
// time, to pass to the next check, and how many it warned about.
func (s *Scheduler) checkInformer(ctx context.Context, absentBefore map[types.UID]bool) (absent map[types.UID]bool, warned int) {
	list, err := s.cfg.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "").String(),
	})
	if err != nil {
		s.log.Warn("informer check: listing unbound pods", "err", err)
		return absentBefore, 0
	}
	absent = map[types.UID]bool{}
	for i := range list.Items {
		pod := &list.Items[i]
		if !s.responsibleFor(pod) {
			continue
		}
		if known, err := s.pods.Pods(pod.Namespace).Get(pod.Name); err == nil && known.UID == pod.UID {
			continue
		}
		absent[pod.UID] = true
		if absentBefore[pod.UID] {
			s.log.Warn("the pod informer has not delivered a pending pod the API server has", "pod", keyOf(pod), "uid", pod.UID, "resourceVersion", pod.ResourceVersion)
			warned++
		}
	}
	return absent, warned
}
