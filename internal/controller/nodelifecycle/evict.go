package nodelifecycle

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// evict deletes the node's pods whose tolerations of its NoExecute taints
// have run out: at once for pods that do not tolerate a taint, after the
// smallest matching tolerationSeconds for those that do for a while.
func (c *Controller) evict(ctx context.Context, node *v1.Node, pods []*lifecyclePod, now time.Time) {
	var noExecute []v1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == v1.TaintEffectNoExecute {
			noExecute = append(noExecute, t)
		}
	}
	if len(noExecute) == 0 {
		return
	}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		deadline, evict := evictionDeadline(pod, noExecute)
		if !evict || now.Before(deadline) {
			continue
		}
		c.log.Info("evicting pod from tainted node", "pod", pod.Namespace+"/"+pod.Name, "node", node.Name)
		err := c.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			c.log.Warn("evicting pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
	}
}

// evictionDeadline says when pod must leave a node carrying taints: evict is
// false if it tolerates every taint forever.
func evictionDeadline(pod *lifecyclePod, taints []v1.Taint) (deadline time.Time, evict bool) {
	for _, taint := range taints {
		added := time.Time{}
		if taint.TimeAdded != nil {
			added = taint.TimeAdded.Time
		}
		seconds, tolerated := tolerationSeconds(pod, &taint)
		if !tolerated {
			return added, true // no toleration: due as soon as the taint is there
		}
		if seconds == nil {
			continue // tolerated forever
		}
		d := added.Add(time.Duration(*seconds) * time.Second)
		if !evict || d.Before(deadline) {
			deadline, evict = d, true
		}
	}
	return deadline, evict
}

// tolerationSeconds returns the smallest tolerationSeconds among the pod's
// tolerations of taint (nil: forever), and whether any tolerates it.
func tolerationSeconds(pod *lifecyclePod, taint *v1.Taint) (*int64, bool) {
	var best *int64
	tolerated := false
	for i := range pod.Tolerations {
		t := &pod.Tolerations[i]
		if !t.ToleratesTaint(klog.Background(), taint, false) {
			continue
		}
		tolerated = true
		if t.TolerationSeconds != nil && (best == nil || *t.TolerationSeconds < *best) {
			best = t.TolerationSeconds
		}
	}
	return best, tolerated
}

// collectOrphans force-deletes pods bound to a node that does not exist,
// after confirming with a live read that the node is really gone.
func (c *Controller) collectOrphans(ctx context.Context, node string, pods []*lifecyclePod) {
	if _, err := c.cfg.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return
	}
	zero := int64(0)
	for _, pod := range pods {
		c.log.Info("deleting pod bound to a deleted node", "pod", pod.Namespace+"/"+pod.Name, "node", node)
		err := c.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			c.log.Warn("deleting orphaned pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
	}
}

// lifecyclePod is the part of a pod the controller reads: which node it is
// bound to, whether it is already going, and what it tolerates. The pod
// informer caches only this, one per pod in the cluster: ~300 B where a
// *v1.Pod, however trimmed, is a 1.2 KiB struct.
type lifecyclePod struct {
	metav1.ObjectMeta // Name, Namespace, UID, ResourceVersion and DeletionTimestamp only
	NodeName          string
	Tolerations       []v1.Toleration
}

func newLifecyclePod(pod *v1.Pod) *lifecyclePod {
	return &lifecyclePod{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion, DeletionTimestamp: pod.DeletionTimestamp,
		},
		NodeName:    pod.Spec.NodeName,
		Tolerations: pod.Spec.Tolerations,
	}
}

// GetObjectKind and DeepCopyObject make a lifecyclePod a runtime.Object, as
// informers' stores expect of what they hold.
func (p *lifecyclePod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (p *lifecyclePod) DeepCopyObject() runtime.Object {
	out := &lifecyclePod{NodeName: p.NodeName}
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	for i := range p.Tolerations {
		out.Tolerations = append(out.Tolerations, *p.Tolerations[i].DeepCopy())
	}
	return out
}

// keepLifecycleParts is the pod informer's transform (see lifecyclePod).
func keepLifecycleParts(obj any) (any, error) {
	if pod, ok := obj.(*v1.Pod); ok {
		return newLifecyclePod(pod), nil
	}
	return obj, nil
}
