package tables

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/registry/rest"
	kubectlprinters "k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/ptr"
)

func testConverter(t *testing.T) *Converter {
	t.Helper()
	c, err := New(func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func columnNames(table *metav1.Table) string {
	var names []string
	for _, c := range table.ColumnDefinitions {
		name := c.Name
		if c.Priority > 0 {
			name += "*"
		}
		names = append(names, name)
	}
	return strings.Join(names, ",")
}

func convertOne(t *testing.T, obj runtime.Object) *metav1.Table {
	t.Helper()
	table, err := testConverter(t).Convert(obj, metav1.IncludeNone)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
		t.Fatalf("table of one %T has rows %v for columns %s", obj, table.Rows, columnNames(table))
	}
	return table
}

func objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(3 * time.Hour)}
}

func TestPrinters(t *testing.T) {
	holder := "node-1"
	hour := int32(3600)
	cases := []struct {
		name    string
		obj     runtime.Object
		columns string
		cells   []any
	}{
		{"node ready with roles", &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: ago(48 * time.Hour), Labels: map[string]string{
				"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker"}},
			Status: corev1.NodeStatus{
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Addresses:  []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "n1"}, {Type: corev1.NodeInternalIP, Address: "192.168.1.10"}},
				NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "Debian GNU/Linux 12", KernelVersion: "6.1.0", ContainerRuntimeVersion: "berth://0.1.0"},
			}},
			"Name,Status,Roles,Age,Version,Internal-IP*,External-IP*,OS-Image*,Kernel-Version*,Container-Runtime*",
			[]any{"n1", "Ready", "control-plane,worker", "2d", "v1.37.2", "192.168.1.10", "<none>", "Debian GNU/Linux 12", "6.1.0", "berth://0.1.0"}},
		{"node not ready and cordoned", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", CreationTimestamp: ago(time.Minute)},
			Spec:   corev1.NodeSpec{Unschedulable: true},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}},
			"", []any{"n2", "NotReady,SchedulingDisabled", "<none>", "60s", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"node never reported", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3", CreationTimestamp: ago(time.Minute)}},
			"", []any{"n3", "Unknown", "<none>", "60s", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"namespace", &corev1.Namespace{ObjectMeta: objectMeta("kube-system"), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
			"Name,Status,Age", []any{"kube-system", "Terminating", "3h"}},
		{"configmap", &corev1.ConfigMap{ObjectMeta: objectMeta("cfg"), Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {1}}},
			"Name,Data,Age", []any{"cfg", int64(3), "3h"}},
		{"secret", &corev1.Secret{ObjectMeta: objectMeta("tls"), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}},
			"Name,Type,Data,Age", []any{"tls", "kubernetes.io/tls", int64(2), "3h"}},
		{"serviceaccount", &corev1.ServiceAccount{ObjectMeta: objectMeta("default")},
			"Name,Secrets,Age", []any{"default", int64(0), "3h"}},
		{"lease", &coordinationv1.Lease{ObjectMeta: objectMeta("n1"), Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
			"Name,Holder,Age", []any{"n1", "node-1", "3h"}},
		{"csr approved and issued", &certificatesv1.CertificateSigningRequest{ObjectMeta: objectMeta("csr-1"),
			Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "kubernetes.io/kube-apiserver-client-kubelet", Username: "system:bootstrap:abcdef", ExpirationSeconds: &hour},
			Status: certificatesv1.CertificateSigningRequestStatus{Certificate: []byte("pem"),
				Conditions: []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}}},
			"Name,Age,SignerName,Requestor,RequestedDuration,Condition",
			[]any{"csr-1", "3h", "kubernetes.io/kube-apiserver-client-kubelet", "system:bootstrap:abcdef", "60m", "Approved,Issued"}},
		{"csr denied beats approved", &certificatesv1.CertificateSigningRequest{ObjectMeta: objectMeta("csr-2"),
			Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
				{Type: certificatesv1.CertificateApproved}, {Type: certificatesv1.CertificateDenied}, {Type: certificatesv1.CertificateFailed}}}},
			"", []any{"csr-2", "3h", "<none>", "", "<none>", "Denied,Failed"}},
		{"csr pending", &certificatesv1.CertificateSigningRequest{ObjectMeta: objectMeta("csr-3")},
			"", []any{"csr-3", "3h", "<none>", "", "<none>", "Pending"}},
		{"core event", &corev1.Event{ObjectMeta: objectMeta("web.1"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", FieldPath: "spec.containers{app}"},
			Reason: "Pulled", Message: "pulled busybox", Type: "Normal", Source: corev1.EventSource{Component: "kubelet", Host: "n1"},
			FirstTimestamp: ago(5 * time.Minute), LastTimestamp: ago(time.Minute), Count: 4},
			"Last Seen,Type,Reason,Object,Subobject*,Source*,Message,First Seen*,Count*,Name*",
			[]any{"60s", "Normal", "Pulled", "pod/web", "spec.containers{app}", "kubelet, n1", "pulled busybox", "5m", int64(4), "web.1"}},
		{"events.k8s.io singleton", &eventsv1.Event{ObjectMeta: objectMeta("web.2"), Regarding: corev1.ObjectReference{Kind: "Node"},
			Reason: "Starting", Note: "agent started", Type: "Normal", EventTime: metav1.NewMicroTime(now.Add(-90 * time.Second)),
			ReportingController: "berth-agent", ReportingInstance: "n1"},
			"Last Seen,Type,Reason,Object,Subobject*,Source*,Message,First Seen*,Count*,Name*",
			[]any{"90s", "Normal", "Starting", "node", "", "berth-agent, n1", "agent started", "90s", int64(1), "web.2"}},
		{"event series", &corev1.Event{ObjectMeta: objectMeta("web.3"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web"},
			EventTime: metav1.NewMicroTime(now.Add(-time.Hour)), Series: &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(now.Add(-2 * time.Second))}},
			"", []any{"2s", "", "", "pod/web", "", "", "", "60m", int64(7), "web.3"}},
		{"kind without a printer", &authorizationv1.SubjectAccessReview{ObjectMeta: objectMeta("fast")}, "Name,Age", []any{"fast", "3h"}},
		{"device class", &resourcev1.DeviceClass{ObjectMeta: objectMeta("gpu")}, "Name,Age", []any{"gpu"}}, // AGE from upstream's clock
		{"resource claim", &resourcev1.ResourceClaim{ObjectMeta: objectMeta("claim")}, "Name,State,Age", []any{"claim", "pending"}},
		{"csi driver", &storagev1.CSIDriver{ObjectMeta: objectMeta("csi.example.com")},
			"Name,AttachRequired,PodInfoOnMount,StorageCapacity,TokenRequests,RequiresRepublish,Modes,Age",
			[]any{"csi.example.com", true, false, false, "<unset>", false, "<none>"}},
		{"pod disruption budget", &policyv1.PodDisruptionBudget{ObjectMeta: objectMeta("budget"),
			Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2))},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}},
			"Name,Min Available,Max Unavailable,Allowed Disruptions,Age", []any{"budget", "2", "N/A", int64(1)}}, // AGE from upstream's clock
		{"role", &rbacv1.Role{ObjectMeta: objectMeta("reader")}, "Name,Created At", []any{"reader", now.Add(-3 * time.Hour).UTC().Format(time.RFC3339)}},
		{"clusterrolebinding", &rbacv1.ClusterRoleBinding{ObjectMeta: objectMeta("monitoring"),
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "monitor"}, {Kind: "User", Name: "alice"}, {Kind: "Group", Name: "ops"},
				{Kind: "ServiceAccount", Namespace: "team", Name: "robot"}}},
			"Name,Role,Age,Users*,Groups*,ServiceAccounts*", []any{"monitoring", "ClusterRole/view", "3h", "monitor, alice", "ops", "team/robot"}},
		{"unstructured", &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w", "creationTimestamp": ago(time.Hour).UTC().Format(time.RFC3339)}}}, "Name,Age", []any{"w", "60m"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table := convertOne(t, tc.obj)
			if tc.columns != "" && columnNames(table) != tc.columns {
				t.Errorf("columns %s, want %s", columnNames(table), tc.columns)
			}
			for i, want := range tc.cells {
				if got := table.Rows[0].Cells[i]; got != want {
					t.Errorf("%s = %#v, want %#v", table.ColumnDefinitions[i].Name, got, want)
				}
			}
		})
	}
}

func TestListsKeepListMetaAndColumns(t *testing.T) {
	c := testConverter(t)
	remaining := int64(5)
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next", RemainingItemCount: &remaining},
		Items: []corev1.Pod{*pod(corev1.PodRunning, 0, running(true)), *pod(corev1.PodPending, 0)}}
	list.Items[1].Name = "db"
	table, err := c.Convert(list, metav1.IncludeMetadata)
	if err != nil {
		t.Fatal(err)
	}
	if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" || table.ResourceVersion != "42" || table.Continue != "next" || *table.RemainingItemCount != 5 {
		t.Errorf("table meta %+v %+v", table.TypeMeta, table.ListMeta)
	}
	if len(table.Rows) != 2 || table.Rows[0].Cells[0] != "web" || table.Rows[1].Cells[0] != "db" || table.Rows[1].Cells[2] != "Pending" {
		t.Errorf("rows %v", table.Rows)
	}
	empty, err := c.Convert(&corev1.NodeList{}, metav1.IncludeMetadata)
	if err != nil {
		t.Fatal(err)
	}
	if len(empty.Rows) != 0 || !strings.HasPrefix(columnNames(empty), "Name,Status,Roles,Age,Version") {
		t.Errorf("empty node list: rows %v columns %s", empty.Rows, columnNames(empty))
	}
}

func TestRowsCarryTheObjectAsAsked(t *testing.T) {
	c := testConverter(t)
	p := pod(corev1.PodRunning, 0, running(true))
	p.Labels = map[string]string{"app": "web"}

	none, err := c.Convert(p, metav1.IncludeNone)
	if err != nil || none.Rows[0].Object.Object != nil || none.Rows[0].Object.Raw != nil {
		t.Errorf("None: %v, object %v", err, none.Rows[0].Object)
	}
	for _, policy := range []metav1.IncludeObjectPolicy{"", metav1.IncludeMetadata} {
		table, err := c.Convert(p, policy)
		if err != nil {
			t.Fatal(err)
		}
		partial, ok := table.Rows[0].Object.Object.(*metav1.PartialObjectMetadata)
		if !ok || partial.Kind != "PartialObjectMetadata" || partial.APIVersion != "meta.k8s.io/v1" || partial.Name != "web" || partial.Labels["app"] != "web" {
			t.Errorf("policy %q: row object %#v", policy, table.Rows[0].Object.Object)
		}
	}
	full, err := c.Convert(p, metav1.IncludeObject)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := full.Rows[0].Object.Object.(*corev1.Pod)
	if !ok || got.Kind != "Pod" || got.APIVersion != "v1" || got.Spec.Containers[0].Name != "app" {
		t.Errorf("Object: row object %#v", full.Rows[0].Object.Object)
	}
	if got == p || p.Kind != "" {
		t.Errorf("Convert modified or aliased the caller's pod (kind now %q)", p.Kind)
	}
	if _, err := c.Convert(p, "Everything"); err == nil {
		t.Errorf("includeObject=Everything accepted")
	}
}

// The Table, encoded as the REST core would, prints through kubectl's own
// table printer with the usual headings.
func TestKubectlPrintsTheTable(t *testing.T) {
	p := pod(corev1.PodRunning, 0, running(true))
	p.Spec.NodeName = "node-1"
	table, err := testConverter(t).Convert(&corev1.PodList{Items: []corev1.Pod{*p}}, metav1.IncludeMetadata)
	if err != nil {
		t.Fatal(err)
	}
	encoded, err := json.Marshal(table)
	if err != nil {
		t.Fatal(err)
	}
	var decoded metav1.Table
	if err := json.Unmarshal(encoded, &decoded); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(encoded, []byte(`"kind":"PartialObjectMetadata"`)) {
		t.Errorf("encoded rows lack their metadata: %s", encoded)
	}
	for wide, want := range map[bool][]string{
		false: {"NAME", "READY", "STATUS", "RESTARTS", "AGE", "web", "1/1", "Running", "10m"},
		true:  {"IP", "NODE", "NOMINATED NODE", "READINESS GATES", "node-1"},
	} {
		var out bytes.Buffer
		if err := kubectlprinters.NewTablePrinter(kubectlprinters.PrintOptions{Wide: wide}).PrintObj(&decoded, &out); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("wide=%v output lacks %q:\n%s", wide, w, out.String())
			}
		}
		if !wide && strings.Contains(out.String(), "node-1") {
			t.Errorf("narrow output shows a wide column:\n%s", out.String())
		}
	}
}

func TestConvertToTableForAPIServerHandlers(t *testing.T) {
	var _ rest.TableConvertor = (*Converter)(nil)
	c := testConverter(t)
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.Pod{*pod(corev1.PodRunning, 0, running(true))}}
	table, err := c.ConvertToTable(context.Background(), list, &metav1.TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(table.ColumnDefinitions) != 9 || table.ResourceVersion != "7" || table.Rows[0].Object.Object != &list.Items[0] {
		t.Errorf("table %+v: rows must carry the listed objects themselves for the handlers to reduce", table)
	}
	watchEvent, err := c.ConvertToTable(context.Background(), &list.Items[0], &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if watchEvent.ColumnDefinitions != nil || len(watchEvent.Rows) != 1 || watchEvent.Rows[0].Cells[2] != "Running" {
		t.Errorf("NoHeaders table %+v", watchEvent)
	}
}

func TestErrorsCarryHTTPCodes(t *testing.T) {
	c := testConverter(t)
	if _, err := c.Convert(pod(corev1.PodRunning, 0), "All"); !apierrors.IsBadRequest(err) {
		t.Errorf("bad includeObject: %v, want 400", err)
	}
	_, err := c.Convert(&metav1.Status{}, metav1.IncludeMetadata)
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != 406 {
		t.Errorf("object without kind or metadata: %v, want 406", err)
	}
}

// A dynamic client's unstructured Pod prints with the Pod columns.
func TestUnstructuredObjectsOfKnownKinds(t *testing.T) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod(corev1.PodRunning, 0, waiting("app", "ErrImagePull")))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	table := convertOne(t, u)
	if table.Rows[0].Cells[2] != "ErrImagePull" || len(table.ColumnDefinitions) != 9 {
		t.Errorf("unstructured pod row %v", table.Rows[0].Cells)
	}
}
