package nodeserver

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodSource is where /pods reads the node's pods: the agent's informer
// cache (pods.Manager). Read-only: the server never changes a pod.
type PodSource interface {
	// Pods returns the pods bound to this node, and false until they are
	// known (the informer's first list), when an empty answer would lie.
	Pods() ([]*corev1.Pod, bool)
}

// pods answers /pods as the kubelet does: a v1 PodList in JSON of the pods
// this agent runs, sorted by namespace and name so answers are stable.
func (s *handlers) pods(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Pods == nil {
		http.Error(w, "this node server has no pod source", http.StatusNotFound)
		return
	}
	pods, known := s.cfg.Pods.Pods()
	if !known {
		http.Error(w, "the node's pods are not known yet (first list from the API server pending)", http.StatusServiceUnavailable)
		return
	}
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: make([]corev1.Pod, 0, len(pods))}
	for _, p := range pods {
		list.Items = append(list.Items, *p)
	}
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&list); err != nil {
		s.cfg.Logger.Warn("write /pods", "err", err)
	}
}
