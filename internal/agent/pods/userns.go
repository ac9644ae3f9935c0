package pods

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/atomicfile"
)

// usernsLength is how many IDs a pod with a user namespace of its own
// gets, the kubelet's default: every ID a container image may use.
const usernsLength = 65536

// maxUsernsRange is the last range: ranges never wrap past 2^32 IDs.
const maxUsernsRange = 1<<32/usernsLength - 1

// usernsRanges hands each pod with hostUsers: false a range of host IDs no
// other pod on the node has, as the kubelet does: range N (N ≥ 1; range 0
// holds the host's own users) is N*65536 up to (N+1)*65536-1, and the pod's
// root is its first ID. A pod's range is written in its directory
// (DataDir/pods/UID/userns) before the pod can use it, so a restarted agent
// keeps it; it is freed with that directory (removePodDir).
type usernsRanges struct {
	dir string // DataDir/pods

	mu     sync.Mutex
	loaded bool
	byPod  map[types.UID]uint32
	owner  map[uint32]types.UID
}

func newUsernsRanges(podsDir string) *usernsRanges {
	return &usernsRanges{dir: podsDir, byPod: map[types.UID]uint32{}, owner: map[uint32]types.UID{}}
}

func (r *usernsRanges) file(uid types.UID) string {
	return filepath.Join(r.dir, string(uid), "userns")
}

// get is the pod's range, given it now if it has none.
func (r *usernsRanges) get(uid types.UID) (uint32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.loadLocked(); err != nil {
		return 0, err
	}
	if n, ok := r.byPod[uid]; ok {
		return n, nil
	}
	for n := uint32(1); n <= maxUsernsRange; n++ {
		if _, taken := r.owner[n]; taken {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(r.file(uid)), 0o750); err != nil {
			return 0, fmt.Errorf("user namespace range: %w", err)
		}
		if err := atomicfile.WriteFile(r.file(uid), []byte(strconv.FormatUint(uint64(n), 10)+"\n"), 0o600); err != nil {
			return 0, fmt.Errorf("user namespace range: %w", err)
		}
		r.byPod[uid], r.owner[n] = n, uid
		return n, nil
	}
	return 0, errors.New("every user namespace range of this node is in use")
}

// release frees the pod's range (its file goes with the pod's directory).
func (r *usernsRanges) release(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.byPod[uid]; ok {
		delete(r.byPod, uid)
		delete(r.owner, n)
	}
}

// loadLocked reads the ranges of the pods this node already has, once.
// A file that cannot be read keeps no range from anyone else: the pod
// gets a new one when it next asks.
func (r *usernsRanges) loadLocked() error {
	if r.loaded {
		return nil
	}
	files, err := filepath.Glob(filepath.Join(r.dir, "*", "userns"))
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 32)
		uid := types.UID(filepath.Base(filepath.Dir(f)))
		if err != nil || n == 0 || n > maxUsernsRange || r.owner[uint32(n)] != "" {
			continue
		}
		r.byPod[uid], r.owner[uint32(n)] = uint32(n), uid
	}
	r.loaded = true
	return nil
}

// wantsOwnUsers reports a pod with hostUsers: false.
func wantsOwnUsers(pod *corev1.Pod) bool {
	return pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers
}

// userNamespace is the CRI user namespace of a pod with hostUsers: false
// (its range, mapped from ID 0), nil for one that uses the host's users.
func (m *Manager) userNamespace(pod *corev1.Pod) (*runtimeapi.UserNamespace, error) {
	if !wantsOwnUsers(pod) {
		return nil, nil
	}
	n, err := m.userns.get(pod.UID)
	if err != nil {
		return nil, configError{err}
	}
	mapping := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: n * usernsLength, Length: usernsLength}}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: mapping, Gids: mapping}, nil
}

// checkRuntimeUserns refuses, before a pod with hostUsers: false gets a
// sandbox, a runtime whose handler does not offer user namespaces: one
// that ignored the request would run the pod with the host's users.
func (m *Manager) checkRuntimeUserns(ctx context.Context, pod *corev1.Pod, handler string) error {
	if !wantsOwnUsers(pod) {
		return nil
	}
	st, err := m.rt.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return fmt.Errorf("runtime status: %w", err)
	}
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == handler && h.GetFeatures().GetUserNamespaces() {
			return nil
		}
	}
	return configError{fmt.Errorf("the container runtime's handler %q does not support user namespaces (hostUsers: false)", handler)}
}
