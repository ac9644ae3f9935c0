package apiserver

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	api "k8s.io/kubernetes/pkg/apis/core"
)

// TestKubectlCreatesAndExposesServices runs kubectl's service generators
// against berth as a user would: ClusterIP and NodePort services get an IP
// from the default service range and a port from the node port range, and
// `kubectl expose` turns a pod's labels into a selector.
func TestKubectlCreatesAndExposesServices(t *testing.T) {
	s := newTestServer(t)
	k := newKubectl(t, s)
	_, serviceRange, _ := net.ParseCIDR("10.96.0.0/12")

	k.Must("", []string{"create", "service", "clusterip", "my", "--tcp=80:8080"}, "service/my created")
	ip := k.Must("", []string{"get", "service", "my", "-o", "jsonpath={.spec.clusterIP}"})
	if !serviceRange.Contains(net.ParseIP(ip)) {
		t.Fatalf("clusterIP %q is not in 10.96.0.0/12", ip)
	}
	k.Must("", []string{"get", "service", "my", "-o", "jsonpath={.spec.ports[0].port}:{.spec.ports[0].targetPort} {.spec.ipFamilyPolicy} {.spec.ipFamilies[0]}"},
		"80:8080 SingleStack IPv4")
	k.Must("", []string{"get", "svc"}, "NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "my", "ClusterIP", ip, "80/TCP")

	k.Must("", []string{"create", "service", "nodeport", "np", "--tcp=443:8443"}, "service/np created")
	port := k.Must("", []string{"get", "service", "np", "-o", "jsonpath={.spec.ports[0].nodePort}"})
	if n, err := strconv.Atoi(port); err != nil || n < 30000 || n > 32767 {
		t.Fatalf("nodePort %q is not in 30000-32767", port)
	}
	k.Must("", []string{"get", "svc", "np"}, "NodePort", "443:"+port+"/TCP")

	createNodes(t, s, "node-1")
	k.Must(kubectlPod, []string{"create", "-f", "-"}, "pod/web created")
	k.Must("", []string{"expose", "pod", "web", "--port=80"}, "service/web exposed")
	k.Must("", []string{"get", "service", "web", "-o", "jsonpath={.spec.selector.app} {.spec.ports[0].port} {.spec.type}"}, "web 80 ClusterIP")

	k.Must("", []string{"get", "svc", "web", "-o", "wide"}, "SELECTOR", "app=web")
	// Endpoints and slices print with kube-apiserver's columns.
	k.Must("apiVersion: v1\nkind: Endpoints\nmetadata: {name: ext}\nsubsets: [{addresses: [{ip: 192.0.2.10}], ports: [{port: 80}]}]\n",
		[]string{"create", "-f", "-"}, "endpoints/ext created")
	k.Must("", []string{"get", "endpoints", "ext"}, "NAME", "ENDPOINTS", "192.0.2.10:80")
	k.Must("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: ext-1}\naddressType: IPv4\nendpoints: [{addresses: [192.0.2.10]}]\nports: [{port: 80}]\n",
		[]string{"create", "-f", "-"}, "endpointslice.discovery.k8s.io/ext-1 created")
	k.Must("", []string{"get", "endpointslices"}, "ADDRESSTYPE", "PORTS", "ENDPOINTS", "ext-1", "IPv4", "192.0.2.10")

	// Re-applying a manifest that names no clusterIP keeps the allocated
	// one (upstream's patchAllocatedValues) and frees nothing.
	applied := "apiVersion: v1\nkind: Service\nmetadata: {name: applied}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n"
	k.Must(applied, []string{"apply", "-f", "-"}, "service/applied created")
	first := k.Must("", []string{"get", "service", "applied", "-o", "jsonpath={.spec.clusterIP}"})
	k.Must(strings.Replace(applied, "port: 80", "port: 81", 1), []string{"apply", "-f", "-"}, "service/applied configured")
	k.Must("", []string{"get", "service", "applied", "-o", "jsonpath={.spec.clusterIP} {.spec.ports[0].port}"}, first+" 81")

	k.Must("", []string{"delete", "service", "my", "np", "web", "applied"}, `service "my" deleted`)
}

// rangeUsed is how many items the stored bitmap at key holds.
func rangeUsed(t *testing.T, s *testServer, key string) int {
	t.Helper()
	kv, err := s.store.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	stored := &api.RangeAllocation{}
	if _, _, err := rangeCodec.Decode(kv.Value, nil, stored); err != nil {
		t.Fatalf("decoding %s: %v", key, err)
	}
	used := 0
	for _, b := range stored.Data {
		for ; b != 0; b &= b - 1 {
			used++
		}
	}
	return used
}

func clusterIPService(name, clusterIP string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		ClusterIP: clusterIP, Selector: map[string]string{"app": name},
		Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
	}}
}

func nodePortService(name string, nodePort int32) *corev1.Service {
	svc := clusterIPService(name, "")
	svc.Spec.Type = corev1.ServiceTypeNodePort
	svc.Spec.Ports[0].NodePort = nodePort
	return svc
}

// wantInvalid checks err is upstream's 422 with a cause on field whose
// message contains msg.
func wantInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want 422 Invalid on %s", err, field)
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == field && strings.Contains(cause.Message, msg) {
			return
		}
	}
	t.Fatalf("no cause %s %q in %+v", field, msg, status.Status().Details.Causes)
}

// TestServiceAllocationIsUpstreams checks cluster IP and node port
// allocation as kube-apiserver does it: explicit values in range are
// honoured, taken or out-of-range ones refused with upstream's field path,
// deletes release, dry runs allocate nothing, and a create that fails after
// allocating gives back what it took.
func TestServiceAllocationIsUpstreams(t *testing.T) {
	s := newTestServer(t)
	ctx := testContext(t)
	svcs := s.client.CoreV1().Services("default")

	if _, err := svcs.Create(ctx, clusterIPService("a", "10.96.0.10"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("explicit cluster IP in range: %v", err)
	}
	_, err := svcs.Create(ctx, clusterIPService("b", "10.96.0.10"), metav1.CreateOptions{})
	wantInvalid(t, err, "spec.clusterIPs", "provided IP is already allocated")
	_, err = svcs.Create(ctx, clusterIPService("b", "10.0.0.1"), metav1.CreateOptions{})
	wantInvalid(t, err, "spec.clusterIPs", "provided IP (10.0.0.1) is not in the valid range")

	// A dry run allocates nothing: the same IP is still free afterwards,
	// and nothing was written.
	before := storeRevision(t, s)
	dry, err := svcs.Create(ctx, clusterIPService("c", "10.96.0.11"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || dry.Spec.ClusterIP != "10.96.0.11" {
		t.Fatalf("dry run: %v (clusterIP %q)", err, dry.Spec.ClusterIP)
	}
	assertStoreUnchanged(t, s, before)

	// A create that fails validation after allocating releases its IP.
	used := rangeUsed(t, s, serviceIPsKey)
	bad := clusterIPService("bad", "10.96.0.11")
	bad.Spec.Ports = append(bad.Spec.Ports, bad.Spec.Ports[0]) // duplicate port
	_, err = svcs.Create(ctx, bad, metav1.CreateOptions{})
	wantInvalid(t, err, "spec.ports[1]", "Duplicate value")
	if got := rangeUsed(t, s, serviceIPsKey); got != used {
		t.Fatalf("a failed create left %d IPs allocated, want %d", got, used)
	}
	if _, err := svcs.Create(ctx, clusterIPService("c", "10.96.0.11"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the IP a dry run and a failed create named: %v", err)
	}

	// Deleting releases.
	if err := svcs.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, clusterIPService("b", "10.96.0.10"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the IP of a deleted service: %v", err)
	}

	// Node ports.
	if _, err := svcs.Create(ctx, nodePortService("np1", 30080), metav1.CreateOptions{}); err != nil {
		t.Fatalf("explicit node port in range: %v", err)
	}
	_, err = svcs.Create(ctx, nodePortService("np2", 30080), metav1.CreateOptions{})
	wantInvalid(t, err, "spec.ports[0].nodePort", "provided port is already allocated")
	_, err = svcs.Create(ctx, nodePortService("np2", 80), metav1.CreateOptions{})
	wantInvalid(t, err, "spec.ports[0].nodePort", "provided port is not in the valid range")
	// Turning a NodePort service into a ClusterIP one releases its port.
	np1, err := svcs.Get(ctx, "np1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	np1.Spec.Type = corev1.ServiceTypeClusterIP
	np1.Spec.Ports[0].NodePort = 0
	if _, err := svcs.Update(ctx, np1, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("NodePort to ClusterIP: %v", err)
	}
	if _, err := svcs.Create(ctx, nodePortService("np2", 30080), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the node port an update gave up: %v", err)
	}
	// The cluster IP is immutable, as upstream.
	c, err := svcs.Get(ctx, "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.ClusterIP, c.Spec.ClusterIPs = "10.96.0.12", []string{"10.96.0.12"}
	_, err = svcs.Update(ctx, c, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec.clusterIPs[0]", "may not change once set")
}

// TestInvalidServicesAreRefusedAsUpstreamRefusesThem sends services
// kube-apiserver v1.37 refuses and expects its 422 and field path, and no
// IP or port left allocated.
func TestInvalidServicesAreRefusedAsUpstreamRefusesThem(t *testing.T) {
	s := newTestServer(t)
	cases := []struct {
		name   string
		mutate func(*corev1.Service)
		field  string
	}{
		{"port zero", func(svc *corev1.Service) { svc.Spec.Ports[0].Port = 0 }, "spec.ports[0].port"},
		{"no ports", func(svc *corev1.Service) { svc.Spec.Ports = nil }, "spec.ports"},
		{"unknown session affinity", func(svc *corev1.Service) { svc.Spec.SessionAffinity = "Sometimes" }, "spec.sessionAffinity"},
		{"ExternalName without a name", func(svc *corev1.Service) { svc.Spec.Type = corev1.ServiceTypeExternalName }, "spec.externalName"},
		{"headless NodePort", func(svc *corev1.Service) {
			svc.Spec.Type, svc.Spec.ClusterIP = corev1.ServiceTypeNodePort, corev1.ClusterIPNone
		}, "spec.clusterIPs[0]"},
		{"invalid selector value", func(svc *corev1.Service) { svc.Spec.Selector = map[string]string{"app": "no spaces"} }, "spec.selector"},
		{"invalid port name", func(svc *corev1.Service) { svc.Spec.Ports[0].Name = "Not_A_Name" }, "spec.ports[0].name"},
		{"invalid internal traffic policy", func(svc *corev1.Service) {
			svc.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicy("Nowhere"))
		}, "spec.internalTrafficPolicy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := clusterIPService("bad", "")
			svc.TypeMeta = metav1.TypeMeta{Kind: "Service", APIVersion: "v1"}
			tc.mutate(svc)
			code, status := rawRequest(t, s, "POST", "/api/v1/namespaces/default/services", "application/json", mustJSON(t, svc))
			if code != 422 || status.Reason != metav1.StatusReasonInvalid {
				t.Fatalf("got HTTP %d reason %q (%s), want 422 Invalid", code, status.Reason, status.Message)
			}
			if !hasCause(status, tc.field) {
				t.Fatalf("no cause for field %s in %+v", tc.field, status.Details)
			}
		})
	}
	// They were refused after allocating (upstream allocates before it
	// validates), so the bitmap was written, and must be empty again.
	if used := rangeUsed(t, s, serviceIPsKey); used != 0 {
		t.Fatalf("refused services left %d cluster IPs allocated", used)
	}
}

// TestEndpointsAndSlicesAreValidatedAsUpstream writes Endpoints and
// EndpointSlices directly, as controllers and users do, through upstream's
// strategies.
func TestEndpointsAndSlicesAreValidatedAsUpstream(t *testing.T) {
	s := newTestServer(t)
	ctx := testContext(t)
	//lint:ignore SA1019 kube-apiserver v1.37 still serves core/v1 Endpoints
	eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "192.0.2.10"}}, Ports: []corev1.EndpointPort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}}
	if _, err := s.client.CoreV1().Endpoints("default").Create(ctx, eps, metav1.CreateOptions{}); err != nil {
		t.Fatalf("valid endpoints: %v", err)
	}
	eps.Name, eps.Subsets[0].Addresses[0].IP = "loop", "127.0.0.1"
	_, err := s.client.CoreV1().Endpoints("default").Create(ctx, eps, metav1.CreateOptions{})
	wantInvalid(t, err, "subsets[0].addresses[0].ip", "loopback")

	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "ext-1", Labels: map[string]string{discoveryv1.LabelServiceName: "ext"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}}},
		Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}}}
	got, err := s.client.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("valid slice: %v", err)
	}
	if got.Ports[0].Protocol == nil || *got.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("slice port protocol not defaulted to TCP: %v", got.Ports[0].Protocol)
	}
	slice.Name, slice.Endpoints[0].Addresses = "ext-2", []string{"not-an-ip"}
	_, err = s.client.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{})
	wantInvalid(t, err, "endpoints[0].addresses[0]", "")
	list, err := s.client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=ext"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("slices of ext: %v, %d items", err, len(list.Items))
	}
}
