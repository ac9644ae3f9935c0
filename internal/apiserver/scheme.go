package apiserver

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	appsapi "k8s.io/kubernetes/pkg/apis/apps"
	autoscalingapi "k8s.io/kubernetes/pkg/apis/autoscaling"
)

// newScheme builds the API server's own scheme: client-go's external types
// (berth has no internal versions: every served version is its own hub, as
// for CRDs upstream), the meta.k8s.io types that Table and
// PartialObjectMetadata responses need, and the field selectors each kind
// accepts. A private scheme keeps the conversions out of client-go's global.
func newScheme(resources []*resource) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("registering client-go types: %w", err)
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	if err := metav1.AddMetaToScheme(s); err != nil {
		return nil, fmt.Errorf("registering meta.k8s.io/v1: %w", err)
	}
	if err := metav1beta1.AddMetaToScheme(s); err != nil {
		return nil, fmt.Errorf("registering meta.k8s.io/v1beta1: %w", err)
	}
	// DaemonSets: spec.templateGeneration is written as the
	// deprecated.daemonset.template.generation annotation. HPAs: v1's CPU
	// target is defaulted by the conversion.
	decodeThroughInternal(s, &appsv1.DaemonSet{}, func() runtime.Object { return &appsapi.DaemonSet{} })
	newHPA := func() runtime.Object { return &autoscalingapi.HorizontalPodAutoscaler{} }
	decodeThroughInternal(s, &autoscalingv1.HorizontalPodAutoscaler{}, newHPA)
	decodeThroughInternal(s, &autoscalingv2.HorizontalPodAutoscaler{}, newHPA)
	if err := addAutoscalingConversion(s); err != nil {
		return nil, err
	}
	for _, res := range resources {
		if res.rules.fields == nil {
			continue // the scheme's default: metadata.name and metadata.namespace
		}
		allowed := res.rules.fields(res.newObj())
		if err := s.AddFieldLabelConversionFunc(res.gvk(), allowFieldLabels(res.gvk(), allowed)); err != nil {
			return nil, fmt.Errorf("registering field selectors of %s: %w", res.gvk(), err)
		}
	}
	return s, nil
}

// decodeThroughInternal makes a decoded obj what kube-apiserver's decoder
// makes of one: it decodes into the internal form, after upstream's
// defaults, and its field manager reads the object converted back, so
// what the conversions write (a DaemonSet's template generation
// annotation, a v1 HPA's CPU target) is recorded as the writer's. berth
// decodes into the served version directly, so the defaulting function
// it registers for obj's type in s takes the same round trip.
func decodeThroughInternal(s *runtime.Scheme, obj runtime.Object, newInternal func() runtime.Object) {
	s.AddTypeDefaultingFunc(obj, func(o any) {
		served := o.(runtime.Object)
		legacyscheme.Scheme.Default(served)
		in := newInternal()
		if err := legacyscheme.Scheme.Convert(served, in, nil); err != nil {
			panic(err) // generated conversions of a registered pair do not fail
		}
		if err := legacyscheme.Scheme.Convert(in, served, nil); err != nil {
			panic(err)
		}
	})
}

// allowFieldLabels accepts the field selectors a kind's fields function
// computes (so what can be asked and what is matched never drift apart).
func allowFieldLabels(gvk schema.GroupVersionKind, allowed fields.Set) runtime.FieldLabelConversionFunc {
	return func(label, value string) (string, string, error) {
		if _, ok := allowed[label]; !ok {
			return "", "", fmt.Errorf("field label not supported for %s: %s", gvk.Kind, label)
		}
		return label, value, nil
	}
}

// codecs bundles the serializers the server uses: the negotiated set for
// clients (JSON, YAML, protobuf, with streaming framers for watch) and
// protobuf for what goes into the store.
type codecs struct {
	scheme     *runtime.Scheme
	negotiated serializer.CodecFactory
	storage    *protobuf.Serializer
}

func newCodecs(s *runtime.Scheme) codecs {
	return codecs{
		scheme: s,
		// With the streaming collection encoders kube-apiserver 1.37
		// enables: they write list items one by one instead of marshalling
		// the whole list into one buffer first. A full LIST of 10000 pods
		// no longer needs a second copy of the list in memory (bench/api,
		// large shape, berth alone: RSS when loaded 495 -> 476 MiB, median
		// of 3 alternating pairs), for 5-8% more CPU per LIST
		// (BenchmarkListPods, 3000 pods).
		negotiated: serializer.NewCodecFactory(s,
			serializer.WithStreamingCollectionEncodingToProtobuf(),
			serializer.WithStreamingCollectionEncodingToJSON()),
		storage: protobuf.NewSerializer(s, s),
	}
}

// encodeForStorage renders obj as Kubernetes protobuf tagged with gv.
func (c codecs) encodeForStorage(obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	data, err := runtime.Encode(c.negotiated.EncoderForVersion(c.storage, gv), obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T for storage: %w", obj, err)
	}
	return data, nil
}

// decodeFromStorage parses stored protobuf into a typed object.
func (c codecs) decodeFromStorage(data []byte, gv schema.GroupVersion) (runtime.Object, error) {
	obj, err := runtime.Decode(c.negotiated.DecoderToVersion(c.storage, gv), data)
	if err != nil {
		return nil, fmt.Errorf("decoding stored object: %w", err)
	}
	return obj, nil
}
