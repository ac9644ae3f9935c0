package pods

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// allocation is what the agent allocated to each of a pod's containers (init
// containers included), by container name: the pod's resources as the node
// runs them, which a resize of the spec changes only once the node admits it.
type allocation map[string]corev1.ResourceRequirements

// allocationFile is the checkpoint of a pod's allocation in its directory,
// so an agent restarted mid-resize knows what its containers were given
// (the kubelet's allocated_pods_state).
const allocationFile = "allocated.json"

// specAllocation is the allocation pod's spec asks for.
func specAllocation(pod *corev1.Pod) allocation {
	a := make(allocation, len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			a[c.Name] = *c.Resources.DeepCopy()
		}
	}
	return a
}

func (a allocation) equal(b allocation) bool {
	if len(a) != len(b) {
		return false
	}
	for name, r := range a {
		other, ok := b[name]
		if !ok || !equality.Semantic.DeepEqual(r.Requests, other.Requests) || !equality.Semantic.DeepEqual(r.Limits, other.Limits) {
			return false
		}
	}
	return true
}

// apply returns pod with its containers' resources as allocated: a copy
// when they differ from the spec's, pod itself otherwise.
func (a allocation) apply(pod *corev1.Pod) *corev1.Pod {
	if a == nil || a.equal(specAllocation(pod)) {
		return pod
	}
	out := pod.DeepCopy()
	for _, cs := range [][]corev1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			if r, ok := a[cs[i].Name]; ok {
				cs[i].Resources = *r.DeepCopy()
			}
		}
	}
	return out
}

// allocations holds the pods' allocations in memory and checkpointed in
// each pod's directory.
type allocations struct {
	podDir func(types.UID) string
	mu     sync.Mutex
	byPod  map[types.UID]allocation
}

func newAllocations(podDir func(types.UID) string) *allocations {
	return &allocations{podDir: podDir, byPod: map[types.UID]allocation{}}
}

// get returns pod uid's allocation, reading its checkpoint the first time.
func (s *allocations) get(uid types.UID) (allocation, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.byPod[uid]; ok {
		return a, true, nil
	}
	data, err := os.ReadFile(filepath.Join(s.podDir(uid), allocationFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read allocation of pod %s: %w", uid, err)
	}
	var a allocation
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, false, fmt.Errorf("allocation of pod %s: %w", uid, err)
	}
	s.byPod[uid] = a
	return a, true, nil
}

// cached returns pod uid's allocation if it is in memory.
func (s *allocations) cached(uid types.UID) allocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byPod[uid]
}

// set checkpoints a as pod uid's allocation (written whole or not at all),
// then keeps it.
func (s *allocations) set(uid types.UID, a allocation) error {
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	dir := s.podDir(uid)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("checkpoint allocation of pod %s: %w", uid, err)
	}
	tmp := filepath.Join(dir, allocationFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("checkpoint allocation of pod %s: %w", uid, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, allocationFile)); err != nil {
		return fmt.Errorf("checkpoint allocation of pod %s: %w", uid, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byPod[uid] = a
	return nil
}

// forget drops pod uid's allocation from memory; its checkpoint goes with
// the pod's directory.
func (s *allocations) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byPod, uid)
}
