package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/testkit/wait"
)

// TestGarbageCollectorGraphIsServedToAdmins: the collector's dependency
// graph is at /debug/controllers/garbagecollector/graph, as
// kube-controller-manager serves it: ?uid= gives an object with its owner,
// and a user the authorizer does not allow the path gets 403.
func TestGarbageCollectorGraphIsServedToAdmins(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	cfg := s.RESTConfig(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	configMaps := cs.CoreV1().ConfigMaps("default")
	owner, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "graph-owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dependent, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "graph-dependent",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	graph := func(ctx context.Context, client rest.Interface) (string, error) {
		body, err := client.Get().AbsPath("/debug/controllers/garbagecollector/graph").Param("uid", string(dependent.UID)).DoRaw(ctx)
		return string(body), err
	}
	wait.UntilCtx(t, 2*time.Minute, "the collector's graph to hold the dependent and its owner", func(ctx context.Context) error {
		dot, err := graph(ctx, cs.CoreV1().RESTClient())
		if err != nil {
			return err
		}
		if !strings.HasPrefix(dot, "strict digraph") || !strings.Contains(dot, string(dependent.UID)) || !strings.Contains(dot, string(owner.UID)) {
			return fmt.Errorf("graph:\n%s", dot)
		}
		return nil
	})

	asBob := rest.CopyConfig(cfg)
	asBob.Impersonate = rest.ImpersonationConfig{UserName: "bob"}
	_, err = graph(ctx, kubernetes.NewForConfigOrDie(asBob).CoreV1().RESTClient())
	if !apierrors.IsForbidden(err) {
		t.Fatalf("bob read the graph: err %v, want 403", err)
	}
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/controllers/no-such-controller/graph").DoRaw(ctx)
	var status *apierrors.StatusError
	if !errors.As(err, &status) || status.ErrStatus.Code != http.StatusServiceUnavailable {
		t.Fatalf("an unknown controller's page: %v %s, want 503", err, body)
	}
}
