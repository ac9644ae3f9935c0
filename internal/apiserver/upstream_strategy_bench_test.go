package apiserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	api "k8s.io/kubernetes/pkg/apis/core"
	k8sv1 "k8s.io/kubernetes/pkg/apis/core/v1"
)

// The costs behind docs/adr/0009: what a pod create spends in upstream's
// pod registry strategy (defaults, conversion to the internal type and
// back, PrepareForCreate, Validate, Canonicalize), and what converting a
// LIST would cost if the watch cache held internal objects.

func BenchmarkPodCreateStrategy(b *testing.B) {
	ctx := genericapirequest.WithNamespace(context.Background(), "bench")
	pods := servedResources()[1]
	if pods.kind != "Pod" {
		b.Fatalf("servedResources()[1] is %s, want Pod", pods.kind)
	}
	s := pods.writeStrategy(nil)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := benchPod(i, "")
		p.Namespace = "bench"
		s.PrepareForCreate(ctx, p)
		if errs := s.Validate(ctx, p); len(errs) > 0 {
			b.Fatal(errs)
		}
		s.Canonicalize(p)
	}
}

// BenchmarkPodConvertToV1 is the per-pod price of serving a v1 LIST from a
// cache of internal objects.
func BenchmarkPodConvertToV1(b *testing.B) {
	p := benchPod(1, "node-0001")
	p.Namespace = "bench"
	k8sv1.SetObjectDefaults_Pod(p)
	var in api.Pod
	if err := k8sv1.Convert_v1_Pod_To_core_Pod(p, &in, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var out corev1.Pod
		if err := k8sv1.Convert_core_Pod_To_v1_Pod(&in, &out, nil); err != nil {
			b.Fatal(err)
		}
	}
}
