package node

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/utils/clock"
)

// Intervals of the kubelet's node status and lease loops.
const (
	// CheckInterval is how often the node's status is recomputed.
	CheckInterval = 10 * time.Second
	// ReportInterval is the longest the status goes unreported when nothing changed.
	ReportInterval = 5 * time.Minute
	// LeaseRenewInterval and LeaseDuration are the kubelet's defaults.
	LeaseRenewInterval = 10 * time.Second
	LeaseDuration      = 40 * time.Second
	// LeaseNamespace holds the nodes' heartbeat leases.
	LeaseNamespace = "kube-node-lease"
)

// Registrar registers the Node and keeps its status current.
type Registrar struct {
	Client  kubernetes.Interface
	Name    string
	Clock   clock.WithTicker
	Observe func(context.Context) (Observation, error)
	Logger  *slog.Logger

	lastReported *corev1.NodeStatus // status of the last report, condition times zeroed
	lastReportAt time.Time
}

// Run registers the node, then recomputes its status every CheckInterval and
// reports it when it changed or ReportInterval passed, until ctx ends.
func (r *Registrar) Run(ctx context.Context) error {
	if err := r.Sync(ctx); err != nil {
		return err
	}
	t := r.Clock.NewTicker(CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			if err := r.Sync(ctx); err != nil {
				r.Logger.Warn("node status update failed; retrying at the next tick", "node", r.Name, "err", err)
			}
		}
	}
}

// Sync observes the node and creates or updates the Node object if needed.
func (r *Registrar) Sync(ctx context.Context) error {
	obs, err := r.Observe(ctx)
	if err != nil {
		return fmt.Errorf("observe node: %w", err)
	}
	status := obs.Status()
	now := r.Clock.Now()
	if r.lastReported != nil && equality.Semantic.DeepEqual(*r.lastReported, status) && now.Sub(r.lastReportAt) < ReportInterval {
		return nil
	}
	if err := r.report(ctx, status, metav1.NewTime(now)); err != nil {
		return err
	}
	r.lastReported, r.lastReportAt = &status, now
	return nil
}

func (r *Registrar) report(ctx context.Context, status corev1.NodeStatus, now metav1.Time) error {
	nodes := r.Client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, r.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return r.create(ctx, status, now)
		}
		if err != nil {
			return fmt.Errorf("get node %s: %w", r.Name, err)
		}
		next := cur.DeepCopy()
		status.Conditions = append([]corev1.NodeCondition(nil), status.Conditions...)
		Merge(cur.Status.Conditions, status.Conditions, now)
		next.Status = status
		keepExtendedResources(cur.Status, &next.Status)
		if _, err := nodes.UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update node %s status: %w", r.Name, err)
		}
		r.Logger.Debug("node status reported", "node", r.Name)
		return nil
	})
}

// create registers the node with its status in the one request, as the
// kubelet registers (kube-apiserver keeps a new Node's status): the Node
// never exists without its capacity, against which the API server checks
// pods created bound to it. A server that dropped the status gets it in a
// second request.
func (r *Registrar) create(ctx context.Context, status corev1.NodeStatus, now metav1.Time) error {
	Merge(nil, status.Conditions, now)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: map[string]string{
		corev1.LabelHostname:   r.Name,
		corev1.LabelOSStable:   status.NodeInfo.OperatingSystem,
		corev1.LabelArchStable: status.NodeInfo.Architecture,
	}}, Status: status}
	created, err := r.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Another incarnation of this agent registered it meanwhile: retry as an update.
		return apierrors.NewConflict(corev1.Resource("nodes"), r.Name, err)
	}
	if err != nil {
		return fmt.Errorf("register node %s: %w", r.Name, err)
	}
	r.Logger.Info("node registered", "node", r.Name)
	if equality.Semantic.DeepEqual(created.Status.Capacity, status.Capacity) {
		return nil
	}
	created.Status = status
	if _, err := r.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set node %s status: %w", r.Name, err)
	}
	return nil
}

// NewLeaseController returns client-go's node-lease heartbeat (the one the
// kubelet uses) for node name: a Lease in kube-node-lease held by the node,
// owned by its Node object, renewed every renew interval.
func NewLeaseController(c kubernetes.Interface, name string, clk clock.Clock, renew time.Duration) lease.Controller {
	return lease.NewController(clk, c, name, int32(LeaseDuration/time.Second), nil, renew, name, LeaseNamespace,
		ownedByNode(c, name))
}

// ownedByNode makes the Node the Lease's owner, as the kubelet does, so the
// Lease is garbage-collected with the Node.
func ownedByNode(c kubernetes.Interface, name string) lease.ProcessLeaseFunc {
	return func(l *coordinationv1.Lease) error {
		if len(l.OwnerReferences) > 0 {
			return nil
		}
		n, err := c.CoreV1().Nodes().Get(context.TODO(), name, metav1.GetOptions{})
		if err != nil {
			return nil // retried on the next renewal, as the kubelet does
		}
		l.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: name, UID: n.UID,
		}}
		return nil
	}
}
