package server_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/server"
	"github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/wait"
)

// advertised is the address the test servers advertise for the kubernetes
// Service (a documentation address: nothing connects to it here).
const advertised = "198.51.100.7"

// startServiceServer runs the server in the test's process, with neither
// agent nor scheduler: pods are bound at creation and their status is
// written as an agent would.
func startServiceServer(t *testing.T) *cluster.Server {
	t.Helper()
	return startServiceServerWith(t, func(*server.Config) {})
}

// startServiceServerWith is startServiceServer with configure's changes to
// its configuration.
func startServiceServerWith(t *testing.T, configure func(*server.Config)) *cluster.Server {
	t.Helper()
	return cluster.InProcess(t, "", func(ctx context.Context, dir string, port int) error {
		cfg := server.Config{DataDir: dir, SocketDir: filepath.Join(dir, "run"), BindAddress: "127.0.0.1", Port: port,
			DisableAgent: true, DisableScheduler: true, AdvertiseAddress: advertised,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
		configure(&cfg)
		return server.Run(ctx, cfg)
	})
}

// TestServerKeepsTheKubernetesService checks the default/kubernetes Service
// kube-apiserver keeps: the first IP of the service range, port 443 to the
// server's port, and Endpoints and an EndpointSlice naming the advertised
// address (upstream's controller and lease endpoint reconciler).
func TestServerKeepsTheKubernetesService(t *testing.T) {
	t.Parallel()
	srv := startServiceServer(t)
	cs := srv.Admin
	wait.UntilCtx(t, time.Minute, "the kubernetes Service", func(ctx context.Context) error {
		svc, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if svc.Spec.ClusterIP != "10.96.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 ||
			svc.Spec.Ports[0].TargetPort != intstr.FromInt(srv.Port) || svc.Spec.Ports[0].Name != "https" {
			return fmt.Errorf("spec %+v", svc.Spec)
		}
		return nil
	})
	wait.UntilCtx(t, time.Minute, "the kubernetes Endpoints", func(ctx context.Context) error {
		eps, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(eps.Subsets) != 1 || len(eps.Subsets[0].Addresses) != 1 || eps.Subsets[0].Addresses[0].IP != advertised ||
			len(eps.Subsets[0].Ports) != 1 || eps.Subsets[0].Ports[0].Port != int32(srv.Port) {
			return fmt.Errorf("subsets %+v", eps.Subsets)
		}
		return nil
	})
	wait.UntilCtx(t, time.Minute, "the kubernetes EndpointSlice", func(ctx context.Context) error {
		slice, err := cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(slice.Endpoints) != 1 || !slices.Equal(slice.Endpoints[0].Addresses, []string{advertised}) {
			return fmt.Errorf("endpoints %+v", slice.Endpoints)
		}
		return nil
	})
	// In-cluster clients dial the Service's IP, and other replicas'
	// clients the advertised address: the serving certificate covers both,
	// as kube-apiserver's does.
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", srv.Port), &tls.Config{InsecureSkipVerify: true}) // only reads the certificate
	if err != nil {
		t.Fatal(err)
	}
	serving := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	for _, want := range []string{"10.96.0.1", advertised} {
		if !slices.ContainsFunc(serving.IPAddresses, func(ip net.IP) bool { return ip.String() == want }) {
			t.Errorf("serving certificate's addresses %v lack %s", serving.IPAddresses, want)
		}
	}
	// Its cluster IP is taken: nobody else gets it.
	_, err = cs.CoreV1().Services("default").Create(context.Background(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "squatter"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("a second service asking for the kubernetes Service's cluster IP: %v, want 422", err)
	}
}

// TestServerKeepsTheDefaultServiceCIDR checks the "kubernetes" ServiceCIDR
// kube-apiserver keeps (upstream's default ServiceCIDR controller): it
// names the service range, says Ready through its status, and comes back
// when deleted.
func TestServerKeepsTheDefaultServiceCIDR(t *testing.T) {
	t.Parallel()
	srv := startServiceServer(t)
	cidrs := srv.Admin.NetworkingV1().ServiceCIDRs()
	var uid types.UID
	wait.UntilCtx(t, time.Minute, "the default ServiceCIDR, Ready", func(ctx context.Context) error {
		cidr, err := cidrs.Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !slices.Equal(cidr.Spec.CIDRs, []string{"10.96.0.0/12"}) {
			return fmt.Errorf("cidrs %v", cidr.Spec.CIDRs)
		}
		if !apimeta.IsStatusConditionTrue(cidr.Status.Conditions, networkingv1.ServiceCIDRConditionReady) {
			return fmt.Errorf("conditions %+v", cidr.Status.Conditions)
		}
		uid = cidr.UID
		return nil
	})
	if err := cidrs.Delete(context.Background(), "kubernetes", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the default ServiceCIDR: %v", err)
	}
	wait.UntilCtx(t, time.Minute, "the default ServiceCIDR, recreated", func(ctx context.Context) error {
		cidr, err := cidrs.Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cidr.UID == uid {
			return fmt.Errorf("still the deleted one (uid %s)", uid)
		}
		return nil
	})
}

// TestServerKeepsTheFlowControlConfiguration checks kube-apiserver's API
// priority and fairness objects are there from the start: the mandatory
// exempt and catch-all levels and FlowSchemas and the suggested ones,
// marked for automatic update as upstream's ensurer marks them.
func TestServerKeepsTheFlowControlConfiguration(t *testing.T) {
	t.Parallel()
	srv := startServiceServer(t)
	fc := srv.Admin.FlowcontrolV1()
	wait.UntilCtx(t, time.Minute, "kube-apiserver's bootstrap flow control objects", func(ctx context.Context) error {
		for _, name := range []string{"exempt", "catch-all", "system", "leader-election", "workload-high", "workload-low", "global-default"} {
			level, err := fc.PriorityLevelConfigurations().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if level.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
				return fmt.Errorf("priority level %s annotations %v", name, level.Annotations)
			}
		}
		for _, name := range []string{"exempt", "catch-all", "system-nodes", "kube-controller-manager", "service-accounts", "global-default"} {
			if _, err := fc.FlowSchemas().Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestServerEndpointsFollowPodReadiness runs upstream's endpoints and
// EndpointSlice controllers inside the server under the controller
// identity: a Service's Endpoints and EndpointSlice list its selected pods'
// IPs as ready or not ready as the pods' Ready condition changes, and drop
// them when the pods go.
func TestServerEndpointsFollowPodReadiness(t *testing.T) {
	t.Parallel()
	srv := startServiceServer(t)
	cs := srv.Admin
	ctx := context.Background()
	readyNode(t, cs, "n1")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
	}}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, ip := range []string{"10.244.0.10", "10.244.0.11"} {
		createRunningPod(t, cs, fmt.Sprintf("web-%d", i), ip, true)
	}
	waitEndpoints(t, cs, "web", []string{"10.244.0.10", "10.244.0.11"}, nil)

	// web-1 stops being ready.
	setReady(t, cs, "web-1", false)
	waitEndpoints(t, cs, "web", []string{"10.244.0.10"}, []string{"10.244.0.11"})

	// web-0 goes.
	if err := cs.CoreV1().Pods("default").Delete(ctx, "web-0", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, cs, "web", nil, []string{"10.244.0.11"})
}

func createRunningPod(t *testing.T, cs kubernetes.Interface, name, ip string, ready bool) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{
		NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}},
	}}
	created, err := cs.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: "192.0.2.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: conditionStatus(ready)}}}
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(context.Background(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setReady(t *testing.T, cs kubernetes.Interface, name string, ready bool) {
	t.Helper()
	wait.UntilCtx(t, 30*time.Second, "pod "+name+" ready="+fmt.Sprint(ready), func(ctx context.Context) error {
		pod, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: conditionStatus(ready)}}
		_, err = cs.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
}

func conditionStatus(b bool) corev1.ConditionStatus {
	if b {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

// waitEndpoints waits until the service's Endpoints and its EndpointSlices
// list exactly ready and notReady (port 8080 named http).
func waitEndpoints(t *testing.T, cs kubernetes.Interface, service string, ready, notReady []string) {
	t.Helper()
	what := fmt.Sprintf("endpoints of %s: ready %v, not ready %v", service, ready, notReady)
	wait.UntilCtx(t, time.Minute, what, func(ctx context.Context) error {
		eps, err := cs.CoreV1().Endpoints("default").Get(ctx, service, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var gotReady, gotNotReady []string
		for _, subset := range eps.Subsets {
			if len(subset.Ports) != 1 || subset.Ports[0].Port != 8080 || subset.Ports[0].Name != "http" {
				return fmt.Errorf("endpoints ports %+v", subset.Ports)
			}
			for _, a := range subset.Addresses {
				gotReady = append(gotReady, a.IP)
			}
			for _, a := range subset.NotReadyAddresses {
				gotNotReady = append(gotNotReady, a.IP)
			}
		}
		if !sameSet(gotReady, ready) || !sameSet(gotNotReady, notReady) {
			return fmt.Errorf("endpoints: ready %v, not ready %v", gotReady, gotNotReady)
		}
		slices, err := cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
		if err != nil {
			return err
		}
		gotReady, gotNotReady = nil, nil
		for _, slice := range slices.Items {
			for _, ep := range slice.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					gotReady = append(gotReady, ep.Addresses...)
				} else {
					gotNotReady = append(gotNotReady, ep.Addresses...)
				}
			}
		}
		if !sameSet(gotReady, ready) || !sameSet(gotNotReady, notReady) {
			return fmt.Errorf("endpointslices: ready %v, not ready %v", gotReady, gotNotReady)
		}
		return nil
	})
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
