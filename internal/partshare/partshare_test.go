package partshare

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func container(name, image, cpu string) corev1.Container {
	return corev1.Container{Name: name, Image: image, Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Mi")},
	}}
}

func TestEqualSlicesShareOneBackingArray(t *testing.T) {
	table := NewTable[[]corev1.Container](8)
	first := Slice(table, []corev1.Container{container("app", "pause:3.10", "10m")})
	second := Slice(table, []corev1.Container{container("app", "pause:3.10", "10m")})
	if &first[0] != &second[0] {
		t.Error("equal containers decoded twice are still two copies")
	}
	for _, other := range [][]corev1.Container{
		{container("app", "pause:3.10", "20m")},                                         // a request differs
		{container("app", "pause:3.10", "10m"), container("side", "pause:3.10", "10m")}, // one more
		{container("side", "pause:3.10", "10m")},                                        // a name differs
	} {
		if got := Slice(table, other); &got[0] == &first[0] || got[0].Name != other[0].Name || len(got) != len(other) {
			t.Errorf("%v was answered with another part: %v", other, got)
		}
	}
	if table.Len() != 4 {
		t.Errorf("table holds %d parts, want 4", table.Len())
	}
}

// Two containers whose encodings concatenate to the same bytes as one
// container's must not be taken for each other.
func TestElementBoundariesAreKept(t *testing.T) {
	table := NewTable[[]corev1.Toleration](8)
	two := Slice(table, []corev1.Toleration{{Key: "a"}, {Key: "b"}})
	var joined corev1.Toleration
	data, _ := (&corev1.Toleration{Key: "a"}).Marshal()
	more, _ := (&corev1.Toleration{Key: "b"}).Marshal()
	if err := joined.Unmarshal(append(data, more...)); err != nil {
		t.Fatal(err)
	}
	if got := Slice(table, []corev1.Toleration{joined}); len(got) != 1 || &got[0] == &two[0] {
		t.Errorf("one toleration %v was answered with %v", joined, got)
	}
}

func TestASharedSliceIsFullSoAppendsCopy(t *testing.T) {
	table := NewTable[[]corev1.Toleration](8)
	s := make([]corev1.Toleration, 1, 4)
	s[0].Key = "a"
	shared := Slice(table, s)
	if cap(shared) != len(shared) {
		t.Fatalf("shared slice has capacity %d for length %d", cap(shared), len(shared))
	}
	grown := append(shared, corev1.Toleration{Key: "b"})
	again := Slice(table, []corev1.Toleration{{Key: "a"}})
	if &grown[0] == &again[0] || len(again) != 1 || cap(again) != 1 {
		t.Error("an append to a shared slice wrote into the shared array")
	}
}

func TestPointersAndNil(t *testing.T) {
	table := NewTable[*corev1.PodSecurityContext](8)
	if Pointer(table, nil) != nil {
		t.Error("nil became a value")
	}
	root := int64(0)
	a := Pointer(table, &corev1.PodSecurityContext{RunAsUser: &root})
	b := Pointer(table, &corev1.PodSecurityContext{RunAsUser: new(int64)})
	c := Pointer(table, &corev1.PodSecurityContext{})
	if a != b || a == c || c.RunAsUser != nil {
		t.Errorf("equal contexts %p %p, different one %p %+v", a, b, c, *c)
	}
	if Slice(NewTable[[]corev1.Container](8), nil) != nil {
		t.Error("a nil slice became a value")
	}
}

func TestAFullTableStartsOverAndKeepsWhatItShared(t *testing.T) {
	table := NewTable[*corev1.Toleration](2)
	a := Pointer(table, &corev1.Toleration{Key: "a"})
	Pointer(table, &corev1.Toleration{Key: "b"})
	c := Pointer(table, &corev1.Toleration{Key: "c"}) // full: starts over
	if table.Len() != 1 {
		t.Errorf("table holds %d parts after starting over, want 1", table.Len())
	}
	if a.Key != "a" || Pointer(table, &corev1.Toleration{Key: "c"}) != c {
		t.Error("starting over lost a part or stopped sharing")
	}
	if Pointer(table, &corev1.Toleration{Key: "a"}) == a {
		t.Error("a part dropped when the table started over is still handed out")
	}
}

func TestEqualMapsAreOneMap(t *testing.T) {
	table := NewTable[map[string]string](8)
	a := Map(table, map[string]string{"app": "web", "tier": "front"})
	b := Map(table, map[string]string{"tier": "front", "app": "web"})
	if reflect.ValueOf(a).UnsafePointer() != reflect.ValueOf(b).UnsafePointer() {
		t.Error("equal maps are two maps")
	}
	for _, other := range []map[string]string{
		{"app": "web", "tier": "back"},
		{"app": "webtier", "": "front"}, // the same bytes without lengths
		{"app": "web"},
	} {
		if got := Map(table, other); len(got) != len(other) || got["app"] != other["app"] || got["tier"] != other["tier"] {
			t.Errorf("%v was answered with %v", other, got)
		}
	}
	if Map(table, nil) != nil || len(Map(table, map[string]string{})) != 0 {
		t.Error("a nil or empty map became another value")
	}
}

// BenchmarkSliceOfOneContainer is the cost a decoded pod pays to share its
// containers: encoding one container and looking it up.
func BenchmarkSliceOfOneContainer(b *testing.B) {
	table := NewTable[[]corev1.Container](8)
	decoded := []corev1.Container{container("app", "registry.k8s.io/pause:3.10", "10m")}
	b.ReportAllocs()
	for b.Loop() {
		Slice(table, decoded)
	}
}

// A huge part is shared by a 32-byte key, and the table does not keep its
// encoding buffer.
func TestHugePartsKeepNoBuffer(t *testing.T) {
	table := NewTable[map[string]string](8)
	huge := strings.Repeat("x", 1<<20)
	a := Map(table, map[string]string{"last-applied": huge})
	b := Map(table, map[string]string{"last-applied": huge})
	if reflect.ValueOf(a).UnsafePointer() != reflect.ValueOf(b).UnsafePointer() {
		t.Error("equal huge maps are two maps")
	}
	if cap(table.key) > maxKeptBuffer {
		t.Errorf("the table keeps a %d-byte buffer", cap(table.key))
	}
}
