package server_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/svmtest"
	"github.com/berth/berth/internal/testkit/wait"
)

// gadgetCRD serves gadgets.example.com at v1 and v2, the same schema, with
// v1 the storage version.
func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema},
				{Name: "v2", Served: true, Schema: schema},
			},
		},
	}
}

func gadget(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": name, "namespace": "default"},
	}}
}

// TestStorageVersionMigrationOfCustomResources: once a CRD's storage
// version moves from v1 to v2, a StorageVersionMigration of its resource
// rewrites the objects stored at v1, succeeds, and leaves v2 alone in the
// CRD's status.storedVersions, as kube-controller-manager's migrator does.
func TestStorageVersionMigrationOfCustomResources(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cfg := s.RESTConfig(t)
	ctx := t.Context()
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	gadgets := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}).Namespace("default")
	migrations := kubernetes.NewForConfigOrDie(cfg).StoragemigrationV1().StorageVersionMigrations()

	if _, err := crds.Create(ctx, gadgetCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	wait.UntilCtx(t, time.Minute, "gadgets to be served", func(ctx context.Context) error {
		_, err := gadgets.Create(ctx, gadget("stored-at-v1"), metav1.CreateOptions{})
		return err
	})
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := crds.Get(ctx, "gadgets.example.com", metav1.GetOptions{})
		if err != nil {
			return err
		}
		crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = false, true
		_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("make v2 the storage version: %v", err)
	}
	storedVersions := func(ctx context.Context) ([]string, error) {
		crd, err := crds.Get(ctx, "gadgets.example.com", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return crd.Status.StoredVersions, nil
	}
	wait.UntilCtx(t, time.Minute, "the CRD to record v1 and v2 as stored versions", func(ctx context.Context) error {
		if got, err := storedVersions(ctx); err != nil || !slices.Equal(got, []string{"v1", "v2"}) {
			return fmt.Errorf("stored versions %v, %v", got, err)
		}
		return nil
	})

	if _, err := migrations.Create(ctx, &svmv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "gadgets"},
		Spec: svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "example.com", Resource: "gadgets"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create migration: %v", err)
	}
	svmtest.Started(t, migrations, "gadgets")
	// The migrator runs once the collector's gadgets monitor has seen that
	// resourceVersion: a later write shows it at once, where otherwise the
	// watch cache's next bookmark, within a minute, would.
	if _, err := gadgets.Create(ctx, gadget("stored-at-v2"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create gadget: %v", err)
	}
	// The collector discovers gadgets within its 30 s period.
	svmtest.Succeeds(t, migrations, "gadgets", 2*time.Minute)
	wait.UntilCtx(t, time.Minute, "the CRD to keep only v2 as its stored version", func(ctx context.Context) error {
		if got, err := storedVersions(ctx); err != nil || !slices.Equal(got, []string{"v2"}) {
			return fmt.Errorf("stored versions %v, %v", got, err)
		}
		return nil
	})
}
