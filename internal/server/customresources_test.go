package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/promscrape"
	"github.com/berth/berth/internal/testkit/wait"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// widgetCRD is a namespaced CRD with a structural schema (a default, a
// minimum), status and scale subresources, short names, a category and a
// printer column.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	integer := func(extra func(*apiextensionsv1.JSONSchemaProps)) apiextensionsv1.JSONSchemaProps {
		p := apiextensionsv1.JSONSchemaProps{Type: "integer"}
		if extra != nil {
			extra(&p)
		}
		return p
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget",
				ShortNames: []string{"wd"}, Categories: []string{"all"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
				},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "integer", JSONPath: ".spec.size"}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": integer(func(p *apiextensionsv1.JSONSchemaProps) {
								p.Minimum = ptr.To(1.0)
								p.Default = &apiextensionsv1.JSON{Raw: []byte("3")}
							}),
							"replicas": integer(nil),
						}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": integer(nil)}},
					},
				}},
			}},
		},
	}
}

func widget(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
}

// TestCustomResourcesAsKubeAPIServer defines a CRD and uses its custom
// resources as a user of kube-apiserver would: discovery, defaulting and
// schema validation, strict field validation, status and scale, a printer
// column, watch, the namespace controller and the garbage collector, and
// the CRD's deletion taking its objects and its discovery entry with it;
// reads served by upstream's watch cache and objects counted for priority
// and fairness, as kube-apiserver's.
func TestCustomResourcesAsKubeAPIServer(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cfg := s.RESTConfig(t)
	ctx := t.Context()
	crds := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	dyn := dynamic.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)
	disc := discovery.NewDiscoveryClientForConfigOrDie(cfg)

	if _, err := crds.Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	wait.UntilTrue(t, time.Minute, "the CRD to be Established and widgets discoverable", func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, "widgets.example.com", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !established(crd) {
			return false, nil
		}
		list, err := disc.ServerResourcesForGroupVersion("example.com/v1")
		return err == nil && len(list.APIResources) > 0, nil
	})
	checkWidgetDiscovery(t, disc)

	createNamespace(t, cs, "crs")
	ws := dyn.Resource(widgets).Namespace("crs")
	created, err := ws.Create(ctx, widget("w1", map[string]any{"replicas": int64(2)}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create widget: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(created.Object, "spec", "size"); size != 3 {
		t.Errorf("spec.size = %d, want the schema's default 3", size)
	}
	_, err = ws.Create(ctx, widget("small", map[string]any{"size": int64(0)}), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !hasCause(err, "spec.size") {
		t.Errorf("a widget below the schema's minimum: got %v, want 422 Invalid naming spec.size", err)
	}
	_, err = ws.Create(ctx, widget("bogus", map[string]any{"bogus": int64(1)}), metav1.CreateOptions{FieldValidation: "Strict"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `unknown field "spec.bogus"`) {
		t.Errorf("an unknown field under fieldValidation=Strict: got %v, want 400 naming spec.bogus", err)
	}

	checkWidgetStatusAndScale(ctx, t, ws)
	checkWidgetTable(ctx, t, cs)
	checkWidgetWatch(ctx, t, ws)
	checkWidgetOwnedByGoneOwnerIsCollected(ctx, t, cs, ws)
	checkWidgetsCachedAndCounted(ctx, t, s, dyn)

	if err := cs.CoreV1().Namespaces().Delete(ctx, "crs", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	wait.UntilTrue(t, 2*time.Minute, "the namespace, and its widgets with it, to be deleted", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "crs", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	createNamespace(t, cs, "crs2")
	if _, err := dyn.Resource(widgets).Namespace("crs2").Create(ctx, widget("w2", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create widget: %v", err)
	}
	if err := crds.Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete CRD: %v", err)
	}
	wait.UntilTrue(t, time.Minute, "the CRD to be gone with its objects, and example.com out of discovery", func(ctx context.Context) (bool, error) {
		if _, err := crds.Get(ctx, "widgets.example.com", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, nil
		}
		groups, err := disc.ServerGroups()
		if err != nil {
			return false, err
		}
		return !slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == "example.com" }), nil
	})
	// Defined again, the CRD starts empty: its objects went with it.
	if _, err := crds.Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD again: %v", err)
	}
	wait.UntilTrue(t, time.Minute, "the new CRD to serve an empty collection", func(ctx context.Context) (bool, error) {
		list, err := dyn.Resource(widgets).Namespace("crs2").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil // not served yet
		}
		if len(list.Items) != 0 {
			t.Fatalf("widgets after the CRD was deleted and defined again: %d, want none", len(list.Items))
		}
		return true, nil
	})
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

func hasCause(err error, field string) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == field {
			return true
		}
	}
	return false
}

// checkWidgetDiscovery expects widgets in both discovery forms with what
// the CRD names.
func checkWidgetDiscovery(t *testing.T, disc *discovery.DiscoveryClient) {
	t.Helper()
	_, lists, err := disc.ServerGroupsAndResources() // aggregated discovery
	if err != nil {
		t.Fatalf("aggregated discovery: %v", err)
	}
	var found *metav1.APIResource
	for _, l := range lists {
		if l.GroupVersion != "example.com/v1" {
			continue
		}
		for i := range l.APIResources {
			if l.APIResources[i].Name == "widgets" {
				found = &l.APIResources[i]
			}
		}
	}
	if found == nil {
		t.Fatal("aggregated discovery lists no example.com/v1 widgets")
	}
	if found.Kind != "Widget" || !found.Namespaced || !slices.Equal(found.ShortNames, []string{"wd"}) || !slices.Equal(found.Categories, []string{"all"}) {
		t.Errorf("widgets in aggregated discovery: %+v", *found)
	}
	legacy, err := disc.ServerResourcesForGroupVersion("example.com/v1")
	if err != nil {
		t.Fatalf("legacy discovery of example.com/v1: %v", err)
	}
	var names []string
	for _, r := range legacy.APIResources {
		names = append(names, r.Name)
	}
	for _, want := range []string{"widgets", "widgets/status", "widgets/scale"} {
		if !slices.Contains(names, want) {
			t.Errorf("legacy discovery of example.com/v1 lists %v, want %s among them", names, want)
		}
	}
}

// checkWidgetStatusAndScale: status is written only through /status, and
// the scale subresource reads and writes the paths the CRD names.
func checkWidgetStatusAndScale(ctx context.Context, t *testing.T, ws dynamic.ResourceInterface) {
	t.Helper()
	w, err := ws.Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get widget: %v", err)
	}
	if err := unstructured.SetNestedField(w.Object, int64(9), "status", "replicas"); err != nil {
		t.Fatal(err)
	}
	if w, err = ws.Update(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update widget: %v", err)
	}
	if _, found, _ := unstructured.NestedInt64(w.Object, "status", "replicas"); found {
		t.Errorf("an update of the main resource set status: %v", w.Object["status"])
	}
	if err := unstructured.SetNestedField(w.Object, int64(2), "status", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.UpdateStatus(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update widget status: %v", err)
	}
	scale, err := ws.Get(ctx, "w1", metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatalf("get scale: %v", err)
	}
	if r, _, _ := unstructured.NestedInt64(scale.Object, "status", "replicas"); scale.GetKind() != "Scale" || r != 2 {
		t.Errorf("scale: kind %s, status.replicas %d; want Scale with 2", scale.GetKind(), r)
	}
	patch := []byte(`{"spec":{"replicas":5}}`)
	if _, err := ws.Patch(ctx, "w1", types.MergePatchType, patch, metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatalf("patch scale: %v", err)
	}
	w, err = ws.Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get widget: %v", err)
	}
	if r, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas"); r != 5 {
		t.Errorf("spec.replicas after scaling to 5: %d", r)
	}
}

// checkWidgetTable expects the CRD's printer column in kubectl's Table.
func checkWidgetTable(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/apis/example.com/v1/namespaces/crs/widgets").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatalf("list widgets as a Table: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatalf("decode Table: %v", err)
	}
	var columns []string
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	// Printer columns replace the default Age column, as upstream's.
	var cells []any
	if len(table.Rows) == 1 {
		cells = table.Rows[0].Cells
	}
	if !slices.Equal(columns, []string{"Name", "Size"}) || len(cells) != 2 || cells[1] != float64(3) {
		t.Errorf("widgets as a Table: columns %v, %d rows (cells %v); want Name and Size (3) for one widget", columns, len(table.Rows), cells)
	}
}

// checkWidgetWatch expects a watch from the listed version to see a change.
func checkWidgetWatch(ctx context.Context, t *testing.T, ws dynamic.ResourceInterface) {
	t.Helper()
	list, err := ws.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list widgets: %v", err)
	}
	watchCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	w, err := ws.Watch(watchCtx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watch widgets: %v", err)
	}
	defer w.Stop()
	if _, err := ws.Patch(ctx, "w1", types.MergePatchType, []byte(`{"metadata":{"labels":{"seen":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("label widget: %v", err)
	}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended before it saw the labelled widget")
			}
			if u, isObj := ev.Object.(*unstructured.Unstructured); isObj && ev.Type == watch.Modified && u.GetLabels()["seen"] == "yes" {
				return
			}
		case <-watchCtx.Done():
			t.Fatal("timed out after 1m waiting for the watch to see the labelled widget")
		}
	}
}

// checkWidgetOwnedByGoneOwnerIsCollected expects the garbage collector to
// delete a widget whose owner is deleted.
func checkWidgetOwnedByGoneOwnerIsCollected(ctx context.Context, t *testing.T, cs kubernetes.Interface, ws dynamic.ResourceInterface) {
	t.Helper()
	owner, err := cs.CoreV1().ConfigMaps("crs").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create owner: %v", err)
	}
	owned := widget("owned", nil)
	owned.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}})
	if _, err := ws.Create(ctx, owned, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create owned widget: %v", err)
	}
	if err := cs.CoreV1().ConfigMaps("crs").Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete owner: %v", err)
	}
	wait.UntilTrue(t, 2*time.Minute, "the garbage collector to delete the widget whose owner is gone", func(ctx context.Context) (bool, error) {
		_, err := ws.Get(ctx, "owned", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// checkWidgetsCachedAndCounted expects widgets served as kube-apiserver
// serves a CRD's objects: a resourceVersion=0 list answered by upstream's
// watch cache, and the stored widgets counted (each minute) for priority
// and fairness's LIST estimates. Both show in kube-apiserver's metrics.
func checkWidgetsCachedAndCounted(ctx context.Context, t *testing.T, srv *cluster.Server, dyn dynamic.Interface) {
	t.Helper()
	admin := newRawClient(t, srv, "")
	series := map[string]string{"group": widgets.Group, "resource": widgets.Resource}
	cachedLists := func() float64 {
		metrics, err := promscrape.Get(admin.client, admin.url+"/metrics")
		if err != nil {
			t.Fatalf("scrape metrics: %v", err)
		}
		n, _ := metrics.Value("apiserver_cache_list_total", series)
		return n
	}
	before := cachedLists()
	wait.UntilCtx(t, time.Minute, "a resourceVersion=0 list of widgets served from the watch cache", func(ctx context.Context) error {
		if _, err := dyn.Resource(widgets).List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
			return err
		}
		if after := cachedLists(); after <= before {
			return fmt.Errorf("apiserver_cache_list_total for widgets %v, not above %v", after, before)
		}
		return nil
	})
	wait.UntilCtx(t, 3*time.Minute, "the widgets counted in apiserver_resource_objects (polled each minute)", func(ctx context.Context) error {
		list, err := dyn.Resource(widgets).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		metrics, err := promscrape.Get(admin.client, admin.url+"/metrics")
		if err != nil {
			return err
		}
		if got, ok := metrics.Value("apiserver_resource_objects", series); !ok || got != float64(len(list.Items)) {
			return fmt.Errorf("apiserver_resource_objects for widgets %v (present %v), want the %d stored", got, ok, len(list.Items))
		}
		return nil
	})
}
