package attack

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
)

// The attacker's namespace and name.
const (
	attackNS = "attack"
	attacker = "mallory"
)

// TestAttackerAtThePodBoundary: a user with `edit` in one namespace and a
// token-joined node try to cross the pod boundary, one way per subtest;
// each is refused as upstream Kubernetes refuses it and changes nothing.
func TestAttackerAtThePodBoundary(t *testing.T) {
	hostcheck.Require(t, hostcheck.Root, hostcheck.Runc, hostcheck.CNIPlugins, hostcheck.BusyboxStatic,
		hostcheck.Overlayfs, hostcheck.Gcc)
	c := startCluster(t)
	mallory := c.editUser()
	node := c.joinNode("attack-joined", "127.0.0.2")
	victim := node.boundPod("victim")

	t.Run("hostPath of the server's data directory", func(t *testing.T) { hostPathOfDataDir(t, c, mallory) })
	t.Run("runAsNonRoot with an image that runs as root", func(t *testing.T) { runAsNonRootWithRootImage(t, c, mallory) })
	t.Run("seccomp RuntimeDefault is applied", func(t *testing.T) { seccompRuntimeDefault(t, c, mallory) })
	t.Run("subPath through a symlink planted in an emptyDir", func(t *testing.T) { subPathSymlinkSwap(t, c, mallory) })
	t.Run("aggregationRule without cluster-admin", func(t *testing.T) { aggregationEscalation(t, c, mallory) })
	t.Run("node changes a pod's labels through pods/status", func(t *testing.T) { nodeRelabelsThroughStatus(t, c, node, victim) })
	t.Run("node redirects pods/log to a loopback server", func(t *testing.T) { nodeRedirectsLogs(t, c, node, victim) })
}

// editUser creates the attacker's namespace with default labels, binds the
// `edit` ClusterRole there to the attacker, and returns the attacker's
// client once the grant is in effect and pods can be created there.
func (c *cluster) editUser() kubernetes.Interface {
	c.t.Helper()
	ctx := c.t.Context()
	if _, err := c.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: attackNS}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: attacker + "-edit", Namespace: attackNS},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: attacker}},
	}
	if _, err := c.admin.RbacV1().RoleBindings(attackNS).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	client := c.userClient(pki.Identity{CommonName: attacker, Client: true})
	c.poll(c.t, attacker+"'s edit grant in "+attackNS+" to take effect", time.Minute, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(attackNS).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	c.poll(c.t, "the default service account of "+attackNS, time.Minute, func(ctx context.Context) (bool, error) {
		_, err := c.admin.CoreV1().ServiceAccounts(attackNS).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return client
}

// busybox is a container of the offline busybox image running command.
func busybox(name string, command ...string) corev1.Container {
	return corev1.Container{Name: name, Image: images.Busybox, ImagePullPolicy: corev1.PullIfNotPresent, Command: command}
}

// attackPod is a pod in the attacker's namespace that never restarts.
func attackPod(name string, spec corev1.PodSpec) *corev1.Pod {
	grace := int64(1)
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.TerminationGracePeriodSeconds = &grace
	// The joined node runs nothing: the pods go where runc runs them.
	spec.NodeSelector = map[string]string{corev1.LabelHostname: localNode}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: attackNS}, Spec: spec}
}

// testLogger passes warnings and worse to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
