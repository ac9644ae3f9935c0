package attack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth/berth/internal/pki"
	testcluster "github.com/berth/berth/internal/testkit/cluster"
	"github.com/berth/berth/internal/testkit/wait"
)

// localNode is the name of the server's own node, where pods run.
const localNode = "attack-local"

// cluster is one `berth server` with its local runtime and agent, its
// images served by an in-process registry on loopback
// (internal/testkit/cluster, which removes every pod and sandbox left
// before the server stops: containers outlive the server by design).
type cluster struct {
	*testcluster.Server
	t           *testing.T
	dataDir     string
	url         string // https://127.0.0.1:PORT
	adminConfig *rest.Config
	admin       kubernetes.Interface
}

// startCluster starts the server and waits until its node is Ready.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	srv := testcluster.Start(t, berthBin, testcluster.Options{LocalNode: localNode})
	cfg := srv.RESTConfig(t)
	cfg.Timeout = 30 * time.Second
	return &cluster{Server: srv, t: t, dataDir: srv.DataDir, url: srv.URL, adminConfig: cfg, admin: kubernetes.NewForConfigOrDie(cfg)}
}

// poll waits up to timeout for cond, failing the test with what it waited for.
func (c *cluster) poll(t *testing.T, what string, timeout time.Duration, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	wait.UntilCtx(t, timeout, what, func(ctx context.Context) error {
		ok, err := cond(ctx)
		if err == nil && !ok {
			err = errNotYet
		}
		return err
	})
}

// errNotYet is a condition of poll's that does not hold yet.
var errNotYet = errors.New("not yet")

// userClient is a client for a user holding a client certificate the
// cluster's client CA signed for id, as an operator hands out.
func (c *cluster) userClient(id pki.Identity) kubernetes.Interface {
	c.t.Helper()
	return c.UserClient(c.t, id)
}

// kubectl runs `berth kubectl` with the admin kubeconfig and returns its
// combined output and whether it succeeded.
func (c *cluster) kubectl(args ...string) (string, bool) {
	c.t.Helper()
	return c.KubectlOutput(c.t, "", args...)
}

// podNames lists the names of the pods in ns, sorted: what a refused
// create must leave as it was.
func (c *cluster) podNames(t *testing.T, ns string) []string {
	t.Helper()
	list, err := c.admin.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// deletePodNow removes a pod the test created (or an attack managed to
// create) without waiting for its node.
func (c *cluster) deletePodNow(ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = c.admin.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
}

// describeContainers renders a pod's container statuses for failure messages.
func describeContainers(p *corev1.Pod) string {
	var out []string
	for _, s := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		out = append(out, fmt.Sprintf("%s: %s", s.Name, describeState(s.State)))
	}
	return fmt.Sprintf("phase %s, containers [%s]", p.Status.Phase, strings.Join(out, "; "))
}

func describeState(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return fmt.Sprintf("waiting %s %q", s.Waiting.Reason, s.Waiting.Message)
	case s.Running != nil:
		return "running since " + s.Running.StartedAt.UTC().Format(time.RFC3339)
	case s.Terminated != nil:
		return fmt.Sprintf("terminated exit %d %s %q", s.Terminated.ExitCode, s.Terminated.Reason, s.Terminated.Message)
	}
	return "no state"
}
