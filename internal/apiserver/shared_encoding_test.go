package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
)

func TestSharedEncodingEncodesOncePerEncoder(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	shared := newSharedEncoding(pod).(runtime.CacheableObject)
	calls := map[runtime.Identifier]int{}
	encoder := func(id runtime.Identifier) func(runtime.Object, io.Writer) error {
		return func(obj runtime.Object, w io.Writer) error {
			calls[id]++
			if obj == runtime.Object(pod) {
				t.Error("the encoder got the cache's own object, which it may change")
			}
			obj.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
			_, err := io.WriteString(w, string(id)+":"+obj.(*corev1.Pod).Name)
			return err
		}
	}
	for range 3 {
		for _, id := range []runtime.Identifier{"protobuf", "json"} {
			var out bytes.Buffer
			if err := shared.CacheEncode(id, encoder(id), &out); err != nil {
				t.Fatal(err)
			}
			if want := string(id) + ":p"; out.String() != want {
				t.Fatalf("encoded %q, want %q", out.String(), want)
			}
		}
	}
	if calls["protobuf"] != 1 || calls["json"] != 1 {
		t.Fatalf("encodes per encoder: %v, want one each", calls)
	}
	if pod.Kind != "" {
		t.Fatalf("the cache's object was changed: kind %q", pod.Kind)
	}
}

// TestWatchersOfOneEventInEveryEncodingEachGetTheirOwn: watchers sharing
// an event's encodings (protobuf twice, JSON, metadata-only, Table) each
// decode the event in the form they asked for.
func TestWatchersOfOneEventInEveryEncodingEachGetTheirOwn(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	ctx := testContext(t)
	var watches []watch.Interface
	for _, cs := range []kubernetes.Interface{s.client, s.client, s.jsonCli} {
		w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watches = append(watches, w)
	}
	meta, err := metadata.NewForConfig(s.config)
	if err != nil {
		t.Fatal(err)
	}
	metaWatch, err := meta.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer metaWatch.Stop()
	table, err := s.jsonCli.CoreV1().RESTClient().Get().Namespace("default").Resource("pods").
		Param("watch", "true").SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()

	if _, err := s.client.CoreV1().Pods("default").Create(ctx, testPod("shared"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, w := range watches {
		ev := <-w.ResultChan()
		if pod, ok := ev.Object.(*corev1.Pod); !ok || pod.Name != "shared" || ev.Type != watch.Added {
			t.Fatalf("watcher %d got %s %T", i, ev.Type, ev.Object)
		}
	}
	ev := <-metaWatch.ResultChan()
	if m, ok := ev.Object.(*metav1.PartialObjectMetadata); !ok || m.Name != "shared" {
		t.Fatalf("metadata watcher got %s %T", ev.Type, ev.Object)
	}
	var tev struct {
		Type   string
		Object metav1.Table
	}
	if err := json.NewDecoder(table).Decode(&tev); err != nil {
		t.Fatal(err)
	}
	if tev.Object.Kind != "Table" || len(tev.Object.Rows) != 1 || len(tev.Object.ColumnDefinitions) == 0 {
		t.Fatalf("table watcher got %+v", tev)
	}
}

// TestSharedEncodingKeepsExactCopies: what an event keeps is exactly its
// encoding, in memory of its own, not the (pooled, reused) buffer it was
// written into.
func TestSharedEncodingKeepsExactCopies(t *testing.T) {
	t.Parallel()
	encodeAs := func(fill byte) func(runtime.Object, io.Writer) error {
		return func(_ runtime.Object, w io.Writer) error {
			for range 110 { // 1100 bytes in pieces, as encoders write, so the buffer grows
				if _, err := w.Write(bytes.Repeat([]byte{fill}, 10)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	var kept []*sharedEncoding
	for _, fill := range []byte("abc") {
		shared := newSharedEncoding(&corev1.Pod{}).(*sharedEncoding)
		if err := shared.CacheEncode("protobuf", encodeAs(fill), io.Discard); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, shared)
	}
	for i, shared := range kept {
		raw := shared.form("protobuf").raw
		if want := bytes.Repeat([]byte{"abc"[i]}, 1100); !bytes.Equal(raw, want) {
			t.Fatalf("event %d kept %q..., want 1100 times %q", i, raw[:min(len(raw), 20)], "abc"[i])
		}
		// The allocator's size classes waste at most an eighth; a buffer
		// grown by doubling would hold 2048.
		if cap(raw) > len(raw)+len(raw)/8 {
			t.Errorf("event %d keeps %d bytes for an encoding of %d", i, cap(raw), len(raw))
		}
	}
}
