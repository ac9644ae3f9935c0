package apiserver

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
)

// stackDepthRecorder is an admission plugin that records how deep in the
// call stack each validation runs.
type stackDepthRecorder struct {
	mu     sync.Mutex
	depths []int
}

func (*stackDepthRecorder) Handles(admission.Operation) bool { return true }

func (r *stackDepthRecorder) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	pcs := make([]uintptr, 4096)
	n := runtime.Callers(0, pcs)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.depths = append(r.depths, n)
	return nil
}

// Every write reaches admission through the same number of wrappers, however
// many writes came before it (the upstream handlers wrap admission per
// request; reusing one handler once grew that chain with every write).
func TestAdmissionChainDoesNotGrowWithRequests(t *testing.T) {
	t.Parallel()
	rec := &stackDepthRecorder{}
	s := newTestServerWith(t, func(c *Config) { c.Admission = rec })
	ctx := testContext(t)
	pods := s.client.CoreV1().Pods("default")
	for i := range 30 {
		pod, err := pods.Create(ctx, testPod(fmt.Sprintf("p%d", i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Labels["n"] = fmt.Sprint(i)
		if _, err := pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	first, last := rec.depths[:2], rec.depths[len(rec.depths)-2:]
	if first[0] != last[0] || first[1] != last[1] {
		t.Errorf("admission ran %v frames deep for the first create and update, %v for the last: the chain grows per request", first, last)
	}
}
