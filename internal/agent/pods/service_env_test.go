package pods

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func service(ns, name, clusterIP string, port int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: []corev1.ServicePort{
			{Name: "http", Port: port, Protocol: corev1.ProtocolTCP},
		}},
	}
}

// servicesSeen is a serviceEnv over an informer's store holding services.
func servicesSeen(t *testing.T, synced bool, services ...*corev1.Service) *serviceEnv {
	t.Helper()
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range services {
		if err := store.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return &serviceEnv{lister: corelisters.NewServiceLister(store), synced: func() bool { return synced }}
}

// The kubelet's rules: default/kubernetes always, the pod's namespace's
// services with a cluster IP only with enableServiceLinks, a pod's own
// variable winning over a service's, and $(VAR) reaching service variables.
func TestServiceEnvironmentAsTheKubelet(t *testing.T) {
	env := servicesSeen(t, true,
		service("default", "kubernetes", "10.96.0.1", 443),
		service("default", "other", "10.96.0.9", 80),
		service("apps", "web", "10.96.0.20", 8080),
		service("apps", "headless", corev1.ClusterIPNone, 80),
		service("elsewhere", "db", "10.96.0.30", 5432),
	)
	m := &Manager{services: env}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "p"}}
	c := &corev1.Container{Name: "c", Env: []corev1.EnvVar{
		{Name: "WEB_SERVICE_PORT", Value: "mine"},
		{Name: "URL", Value: "http://$(WEB_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
	}}

	got := envMapOf(t, m, pod, c)
	want := map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_PORT": "tcp://10.96.0.1:443",
		"WEB_SERVICE_HOST": "10.96.0.20", "WEB_SERVICE_PORT": "mine", "WEB_PORT_8080_TCP_ADDR": "10.96.0.20",
		"URL": "http://10.96.0.20:443",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "OTHER_") || strings.HasPrefix(k, "HEADLESS_") || strings.HasPrefix(k, "DB_") {
			t.Errorf("%s set: only default/kubernetes and the pod's namespace's services with an IP belong", k)
		}
	}

	pod.Spec.EnableServiceLinks = ptr.To(false)
	got = envMapOf(t, m, pod, &corev1.Container{Name: "c"})
	if got["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" || got["WEB_SERVICE_HOST"] != "" {
		t.Errorf("enableServiceLinks false: %v; want only the kubernetes service's variables", got)
	}
}

func TestNoContainerEnvironmentBeforeServicesAreRead(t *testing.T) {
	m := &Manager{services: servicesSeen(t, false)}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "p"}}
	if _, err := m.envFor(context.Background(), pod, &corev1.Container{Name: "c"}); !errors.Is(err, errServicesNotRead) {
		t.Fatalf("envFor before the services were listed: %v; want %v", err, errServicesNotRead)
	}
}

func envMapOf(t *testing.T, m *Manager, pod *corev1.Pod, c *corev1.Container) map[string]string {
	t.Helper()
	kvs, err := m.envFor(context.Background(), pod, c)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = string(kv.Value)
	}
	return out
}
