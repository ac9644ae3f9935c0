package apiserver

import (
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// newScheme builds the API server's own scheme: client-go's external types
// (berth has no internal versions: every served version is its own hub, as
// for CRDs upstream), the meta.k8s.io types that Table and
// PartialObjectMetadata responses need, and the field selectors each kind
// accepts. A private scheme keeps the conversions out of client-go's global.
func newScheme() (*runtime.Scheme, error) {
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
	for gvk, allowed := range fieldSelectorsByKind {
		if err := s.AddFieldLabelConversionFunc(gvk, allowFieldLabels(gvk, allowed)); err != nil {
			return nil, fmt.Errorf("registering field selectors of %s: %w", gvk, err)
		}
	}
	return s, nil
}

// fieldSelectorsByKind lists the field selectors each kind accepts beyond
// metadata.name and metadata.namespace, as upstream's conversion functions do.
var fieldSelectorsByKind = map[schema.GroupVersionKind][]string{
	corev1.SchemeGroupVersion.WithKind("Pod"): {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
		"spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"},
	corev1.SchemeGroupVersion.WithKind("Node"):      {"spec.unschedulable"},
	corev1.SchemeGroupVersion.WithKind("Namespace"): {"status.phase"},
	corev1.SchemeGroupVersion.WithKind("Secret"):    {"type"},
	corev1.SchemeGroupVersion.WithKind("Event"): {"involvedObject.kind", "involvedObject.namespace",
		"involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
		"involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"},
	eventsv1.SchemeGroupVersion.WithKind("Event"): {"regarding.kind", "regarding.namespace", "regarding.name",
		"regarding.uid", "regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
		"reason", "reportingController", "type"},
	certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"): {"spec.signerName"},
}

func allowFieldLabels(gvk schema.GroupVersionKind, allowed []string) runtime.FieldLabelConversionFunc {
	set := map[string]bool{"metadata.name": true, "metadata.namespace": true}
	for _, f := range allowed {
		set[f] = true
	}
	return func(label, value string) (string, string, error) {
		if !set[label] {
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
		scheme:     s,
		negotiated: serializer.NewCodecFactory(s),
		storage:    protobuf.NewSerializer(s, s),
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
