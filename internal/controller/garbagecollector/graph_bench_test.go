package garbagecollector

import (
	"fmt"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkGraphBytesPerObject reports the graph's heap cost per object for
// 10000 pods owned by 1000 ConfigMaps (owner and dependent both recorded).
func BenchmarkGraphBytesPerObject(b *testing.B) {
	const owners, perOwner = 1000, 10
	var perObject float64
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g := newGraph()
		for i := range owners {
			owner := configMap("ns", fmt.Sprintf("owner-%d", i))
			g.upsert(owner)
			for j := range perOwner {
				dep := pod("ns", fmt.Sprintf("pod-%d-%d", i, j), ownedBy(owner, true))
				dep.uid = types.UID(fmt.Sprintf("%08d-0000-0000-0000-%012d", i, j))
				g.upsert(dep)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perObject = float64(after.HeapAlloc-before.HeapAlloc) / (owners * (perOwner + 1))
		runtime.KeepAlive(g)
	}
	b.ReportMetric(perObject, "bytes/object")
}
