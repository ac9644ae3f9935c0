package apiserver

import (
	"bytes"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// sharedEncoding wraps one watch event's cached object for all watchers
// that see it unchanged, so that it is encoded once per encoding: the
// watch handler's encoders recognise runtime.CacheableObject and cache
// whole encoded events in it, keyed by encoder, target and event type (as
// kube-apiserver's watch cache does with its cachingObject). A pod event
// otherwise was encoded for its node's agent, the scheduler, the node
// authorizer's graph and node lifecycle one by one.
type sharedEncoding struct {
	obj runtime.Object // the cache's object: never modified

	mu sync.Mutex
	// encoded holds an entry per encoder that asked: one or two in
	// practice, so a slice, not a map (a map's buckets are about 270 bytes
	// per event, kept for as long as the event is in the cache's history).
	encoded []*encodedForm
}

// encodedForm is one encoder's output, made once.
type encodedForm struct {
	id   runtime.Identifier
	once sync.Once
	raw  []byte
	err  error
}

var _ runtime.CacheableObject = (*sharedEncoding)(nil)

// encodeBuffers are where events are encoded before they are kept: the
// cache holds each encoding as long as the event stays in its history, so
// it keeps an exact-size copy rather than a buffer grown by doubling (up to
// twice the encoding's size), and the growing is done once per buffer.
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledEncodeBuffer bounds what the pool keeps: a rare large object
// (a big ConfigMap or CRD) should not pin its buffer.
const maxPooledEncodeBuffer = 1 << 20

func putEncodeBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledEncodeBuffer {
		encodeBuffers.Put(buf)
	}
}

func newSharedEncoding(obj runtime.Object) runtime.Object {
	return &sharedEncoding{obj: obj}
}

// CacheEncode implements runtime.CacheableObject.
func (s *sharedEncoding) CacheEncode(id runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	form := s.form(id)
	form.once.Do(func() {
		buf := encodeBuffers.Get().(*bytes.Buffer)
		defer putEncodeBuffer(buf)
		buf.Reset()
		if form.err = encode(s.GetObject(), buf); form.err == nil {
			form.raw = bytes.Clone(buf.Bytes())
		}
	})
	if form.err != nil {
		return form.err
	}
	_, err := w.Write(form.raw)
	return err
}

func (s *sharedEncoding) form(id runtime.Identifier) *encodedForm {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.encoded {
		if f.id == id {
			return f
		}
	}
	f := &encodedForm{id: id}
	s.encoded = append(s.encoded, f)
	return f
}

// GetObject implements runtime.CacheableObject: a shallow copy, which the
// encoders own (they set its TypeMeta; nested fields are only read).
func (s *sharedEncoding) GetObject() runtime.Object { return shallowCopy(s.obj) }

// GetObjectKind implements runtime.Object. The wrapper has no kind of its
// own to set: encoders go through CacheEncode and set it on their copy.
func (s *sharedEncoding) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (s *sharedEncoding) DeepCopyObject() runtime.Object { return s.obj.DeepCopyObject() }
