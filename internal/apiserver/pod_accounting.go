package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth/berth/internal/fit"
	"github.com/berth/berth/internal/store"
)

// nodeUsagePrefix holds one small accounting record per node: what the pods
// bound there request and the host ports they hold (fit.Usage, as JSON: it
// is berth's own record, never served). Binding reads this one key instead
// of the node's pods, and every write that changes which pods count on a
// node updates it in the same transaction.
const nodeUsagePrefix = "/registry/berth.io/nodeusage/"

// accountingRetries bounds retries when only the usage record moved under
// us, not the pod itself. Within this server a node's transactions take
// turns (nodeTurns), so that is another server sharing etcd binding to the
// same node, or the node itself changing.
const accountingRetries = 16

// podAccounting is the pods resource's store: plain writes pass through;
// writes that bind, finish or remove a counted pod carry the node's usage
// update, and those that bind check the node's constraints (internal/fit).
type podAccounting struct {
	store.Interface
	decode func(store.KV) (*corev1.Pod, error)
	encode func(*corev1.Pod) ([]byte, error)
	nodes  *objectStore
	usages *usageCache
	turns  *nodeTurns
}

func newPodAccounting(inner store.Interface, pods, nodes *objectStore) *podAccounting {
	return &podAccounting{Interface: inner, nodes: nodes, usages: newUsageCache(), turns: newNodeTurns(), decode: func(kv store.KV) (*corev1.Pod, error) {
		obj, err := pods.decode(kv)
		if err != nil {
			return nil, err
		}
		return obj.(*corev1.Pod), nil
	}, encode: func(pod *corev1.Pod) ([]byte, error) { return pods.encode(pod) }}
}

// counts reports whether a pod holds a share of its node.
func counts(p *corev1.Pod) bool {
	return p != nil && p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// Create admits a pod created already bound (spec.nodeName set) against its node.
func (a *podAccounting) Create(ctx context.Context, key string, value []byte) (int64, error) {
	pod, err := a.decode(store.KV{Key: key, Value: value})
	if err != nil {
		return a.Interface.Create(ctx, key, value)
	}
	return a.createObject(ctx, key, value, pod)
}

// createObject is Create for a caller that holds the pod value encodes,
// which spares decoding it again. A pod created already bound is admitted
// as the kubelet admits it; one its node refuses is stored as the kubelet
// would leave it (rejectedBound), and obj becomes that pod.
func (a *podAccounting) createObject(ctx context.Context, key string, value []byte, obj runtime.Object) (int64, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !counts(pod) {
		return a.Interface.Create(ctx, key, value)
	}
	rev, err := a.retry(ctx, pod.Spec.NodeName, func(attempt int) ([]store.Op, error) {
		ops, err := a.bindOps(ctx, pod, attempt > 0, admitBound)
		if attempt == 0 && errors.As(err, new(*rejectedBound)) {
			// A refusal is stored for good: decide it on the stored node
			// and usage, not on cached copies that may be stale.
			return nil, store.ErrConflict
		}
		return append(ops, store.Op{Key: key, Value: value}), err
	}, func() error {
		if _, err := a.Get(ctx, key); err == nil {
			return store.ErrAlreadyExists
		}
		return nil
	})
	var rejected *rejectedBound
	if !errors.As(err, &rejected) {
		return rev, err
	}
	pod.Status = rejected.Status(pod)
	failed, err := a.encode(pod)
	if err != nil {
		return 0, fmt.Errorf("encode the rejected pod: %w", err)
	}
	return a.Interface.Create(ctx, key, failed)
}

// rejectedBound is a pod created bound to a node whose kubelet would refuse
// it. kube-apiserver stores such a pod and its kubelet then fails it;
// berth's accounting never counts a pod that does not fit, so the create
// itself stores it failed, with the kubelet's reason and message.
type rejectedBound struct{ fit.Rejection }

func (r *rejectedBound) Error() string { return r.Reason + ": " + r.Message }

// admitBound is the node check of a pod created bound: the kubelet's.
func admitBound(pod *corev1.Pod, node *corev1.Node, usage fit.Usage) error {
	if r := fit.AdmitBound(pod, node, usage); r != nil {
		return &rejectedBound{*r}
	}
	return nil
}

// scheduledFits is the node check of a binding: everything the scheduler's
// filters check (internal/fit).
func scheduledFits(pod *corev1.Pod, node *corev1.Node, usage fit.Usage) error {
	if fails := fit.Check(pod, node, usage); len(fails) > 0 {
		return fitError(pod, node.Name, fails)
	}
	return nil
}

// Update releases the node share of a pod that finishes and moves that of
// a pod whose requests change.
func (a *podAccounting) Update(ctx context.Context, key string, expected int64, value []byte) (int64, error) {
	old, _, err := a.current(ctx, key, expected)
	if err != nil {
		return 0, err
	}
	pod, err := a.decode(store.KV{Key: key, Value: value})
	if err != nil {
		return a.Interface.Update(ctx, key, expected, value)
	}
	return a.update(ctx, key, expected, value, old, pod)
}

// updateObject is Update for a caller that read old at expected and holds
// the pod value encodes: it spares a second read of old and two decodes.
// Should the pod have moved since, the guarded write fails as Update would.
func (a *podAccounting) updateObject(ctx context.Context, key string, expected int64, value []byte, oldObj, obj runtime.Object) (int64, error) {
	old, oldOK := oldObj.(*corev1.Pod)
	pod, ok := obj.(*corev1.Pod)
	if !oldOK || !ok {
		return a.Update(ctx, key, expected, value)
	}
	return a.update(ctx, key, expected, value, old, pod)
}

func (a *podAccounting) update(ctx context.Context, key string, expected int64, value []byte, old, pod *corev1.Pod) (int64, error) {
	switch {
	case !counts(old):
		return a.Interface.Update(ctx, key, expected, value)
	case !counts(pod):
		return a.releasing(ctx, key, expected, old, value)
	case !fit.PodRequests(old).Equal(fit.PodRequests(pod)):
		// A resize, or the node reporting what it allocated: the usage
		// moves with the pod. Like kube-scheduler, the usage counts a
		// resize before the node decides it; the node's own admission of
		// the resize decides whether it is carried out.
		return a.moving(ctx, key, expected, old, pod, value)
	default:
		return a.Interface.Update(ctx, key, expected, value)
	}
}

// Delete releases the node share of a counted pod that goes away.
func (a *podAccounting) Delete(ctx context.Context, key string, expected int64) (int64, error) {
	old, rev, err := a.current(ctx, key, expected)
	if err != nil {
		return 0, err
	}
	if !counts(old) {
		return a.Interface.Delete(ctx, key, expected)
	}
	if expected == 0 {
		expected = rev
	}
	return a.releasing(ctx, key, expected, old, nil)
}

// deleteObject is Delete for a caller that read old at expected: it spares
// a second read. Whether the pod counts (its node and phase) is what it was
// at expected; had the pod moved since, the guarded write fails as Delete's.
func (a *podAccounting) deleteObject(ctx context.Context, key string, expected int64, oldObj runtime.Object) (int64, error) {
	old, ok := oldObj.(*corev1.Pod)
	if !ok || expected == 0 {
		return a.Delete(ctx, key, expected)
	}
	if !counts(old) {
		return a.Interface.Delete(ctx, key, expected)
	}
	return a.releasing(ctx, key, expected, old, nil)
}

// releasing writes value (nil: deletes) at key with old's node share released.
func (a *podAccounting) releasing(ctx context.Context, key string, expected int64, old *corev1.Pod, value []byte) (int64, error) {
	return a.moving(ctx, key, expected, old, nil, value)
}

// moving writes value (nil: deletes) at key in one transaction with old's
// node usage record moved from old's share to pod's (nil: none).
func (a *podAccounting) moving(ctx context.Context, key string, expected int64, old, pod *corev1.Pod, value []byte) (int64, error) {
	node := old.Spec.NodeName
	return a.retry(ctx, node, func(attempt int) ([]store.Op, error) {
		usage, rev, err := a.usage(ctx, node, attempt > 0)
		if err != nil {
			return nil, err
		}
		usage = usage.Remove(old)
		if pod != nil {
			usage = usage.Add(pod)
		}
		usageOp, err := usageWrite(node, usage, rev)
		return []store.Op{{Key: key, ExpectModRevision: expected, Value: value}, usageOp}, err
	}, func() error {
		_, _, err := a.current(ctx, key, expected)
		return err
	})
}

// current reads the pod at key, failing as a guarded write would when it
// has moved past expected (0 = any revision).
func (a *podAccounting) current(ctx context.Context, key string, expected int64) (*corev1.Pod, int64, error) {
	kv, err := a.Get(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	if expected != 0 && kv.ModRevision != expected {
		return nil, 0, fmt.Errorf("pod %s: %w", key, store.ErrConflict)
	}
	pod, err := a.decode(kv)
	return pod, kv.ModRevision, err
}

// retry runs one accounting transaction on node's usage record, rebuilding
// it when it conflicts only because the record or node moved; stillValid
// reports (as an error) when the conflict was the caller's own guard
// instead. build learns which attempt it makes (0 first). Each attempt reads
// and writes in node's turn; stillValid waits outside it.
func (a *podAccounting) retry(ctx context.Context, node string, build func(attempt int) ([]store.Op, error), stillValid func() error) (int64, error) {
	for attempt := range accountingRetries {
		var rev int64
		err := a.inNodeTurn(ctx, node, func() error {
			ops, err := build(attempt)
			if err != nil {
				return err
			}
			rev, err = a.Txn(ctx, ops)
			return err
		})
		if !errors.Is(err, store.ErrConflict) {
			return rev, err
		}
		if err := stillValid(); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("node accounting kept conflicting: %w", store.ErrConflict)
}

// inNodeTurn runs txn, which reads node's usage record and writes it back
// in one transaction, while no other transaction of this server does so
// (nodeTurns). txn must not wait for another node's turn.
func (a *podAccounting) inNodeTurn(ctx context.Context, node string, txn func() error) error {
	done, err := a.turns.wait(ctx, node)
	if err != nil {
		return err
	}
	defer done()
	return txn()
}

// bindOps checks that pod (carrying its target spec.nodeName) passes check on its node
// at the node's and usage record's current revisions and returns the guards
// and the usage update that make the bind atomic with that check. The node
// comes from the watch cache unless fromStore (a retry after a conflict):
// the guard on its revision makes a stale copy fail the transaction, never
// pass a check the stored node would fail.
func (a *podAccounting) bindOps(ctx context.Context, pod *corev1.Pod, fromStore bool, check nodeCheck) ([]store.Op, error) {
	nodeName := pod.Spec.NodeName
	// The node is shared when cached (not to be modified); the store has
	// it when the cache does not yet (a node created a moment ago).
	node, nodeRev, err := cachedOrStored[*corev1.Node](withObjectNamespace(ctx, ""), a.nodes, nodeName, fromStore)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewConflict(corev1.Resource("pods"), pod.Name, fmt.Errorf("node %q not found", nodeName))
		}
		return nil, err
	}
	usage, usageRev, err := a.usage(ctx, nodeName, fromStore)
	if err != nil {
		return nil, err
	}
	if err := check(pod, node, usage); err != nil {
		return nil, err
	}
	usageOp, err := usageWrite(nodeName, usage.Add(pod), usageRev)
	if err != nil {
		return nil, err
	}
	nodeGuard := store.Op{Key: a.nodes.res.key("", nodeName), ExpectModRevision: nodeRev, CheckOnly: true}
	return []store.Op{nodeGuard, usageOp}, nil
}

// nodeCheck refuses, as an error, a pod the node cannot take given usage.
type nodeCheck func(pod *corev1.Pod, node *corev1.Node, usage fit.Usage) error

// fitError is 409 Conflict when waiting could let the pod fit (resources or
// ports held by other pods), 422 Invalid when it never can on this node.
func fitError(pod *corev1.Pod, node string, fails []fit.Failure) error {
	reasons := make([]string, 0, len(fails))
	unresolvable := true
	for _, f := range fails {
		reasons = append(reasons, f.Reason)
		unresolvable = unresolvable && f.Unresolvable
	}
	msg := fmt.Sprintf("pod %s does not fit node %s: %s", pod.Name, node, strings.Join(reasons, "; "))
	if unresolvable {
		return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), pod.Name,
			field.ErrorList{field.Forbidden(field.NewPath("spec", "nodeName"), msg)})
	}
	return apierrors.NewConflict(corev1.Resource("pods"), pod.Name, errors.New(msg))
}

// usage reads a node's accounting record (zero, revision 0, when absent):
// this server's last copy unless fromStore (a retry after a conflict) or it
// has none, since the transactions guard the record's revision.
func (a *podAccounting) usage(ctx context.Context, node string, fromStore bool) (fit.Usage, int64, error) {
	rec, ok := a.usages.get(node)
	if fromStore || !ok {
		kv, err := a.Get(ctx, nodeUsagePrefix+node)
		if errors.Is(err, store.ErrNotFound) {
			return fit.Usage{}, 0, nil
		}
		if err != nil {
			return fit.Usage{}, 0, err
		}
		rec = usageRecord{value: kv.Value, rev: kv.ModRevision}
		a.usages.put(node, rec)
	}
	var u fit.Usage
	if err := json.Unmarshal(rec.value, &u); err != nil {
		return fit.Usage{}, 0, fmt.Errorf("node usage record of %s: %w", node, err)
	}
	return u, rec.rev, nil
}

func usageWrite(node string, u fit.Usage, rev int64) (store.Op, error) {
	data, err := json.Marshal(u)
	if err != nil {
		return store.Op{}, err
	}
	return store.Op{Key: nodeUsagePrefix + node, ExpectModRevision: rev, Value: data}, nil
}

var _ objectWriter = (*podAccounting)(nil)
