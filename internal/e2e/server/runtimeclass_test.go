package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berth/berth/internal/testkit/images"
	"github.com/berth/berth/internal/testkit/wait"
)

// runtimeHandler is the extra handler the cluster's runtime is started
// with (--runtime-handler), as conformance's RuntimeClass tests expect.
const runtimeHandler = "test-handler"

// checkRuntimeClassPods runs a pod whose RuntimeClass names the runtime's
// extra handler, and shows the handler reaches the runtime: a class naming
// a handler the runtime lacks fails the pod's sandbox with the runtime's
// refusal of that handler.
func checkRuntimeClassPods(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	for name, handler := range map[string]string{"registered": runtimeHandler, "unregistered": "not-in-the-runtime"} {
		if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		grace := int64(1)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "class-" + name}, Spec: corev1.PodSpec{
			RuntimeClassName: &name, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "main", Image: images.Busybox, Command: []string{"sleep", "3600"}}},
		}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitForPod(t, cs, "class-registered", podReady)
	want := `unknown runtime handler "not-in-the-runtime"`
	wait.UntilCtx(t, 2*time.Minute, "a FailedCreatePodSandBox event of pod class-unregistered naming its handler", func(ctx context.Context) error {
		events, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=class-unregistered"})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "FailedCreatePodSandBox" && strings.Contains(e.Message, want) {
				return nil
			}
		}
		return fmt.Errorf("events %v", events.Items)
	})
	for _, name := range []string{"registered", "unregistered"} {
		if err := cs.CoreV1().Pods("default").Delete(ctx, "class-"+name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
