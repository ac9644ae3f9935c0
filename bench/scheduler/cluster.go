package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/bench/internal/ticker"
	"github.com/berth/berth/internal/testkit/wait"
)

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitForServer(ctx context.Context, kubeconfig string, done <-chan error) (*kubernetes.Clientset, error) {
	var cs *kubernetes.Clientset
	err := wait.PollTrue(ctx, 2*time.Minute, "the server to serve the API", func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("server exited: %v", err)
		default:
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, nil
		}
		cfg.QPS, cfg.Burst = 100000, 100000
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		if cs, err = kubernetes.NewForConfig(cfg); err != nil {
			return false, err
		}
		_, err = cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return cs, err
}

// parallel runs fn(i) for i in [0,n) on workers goroutines.
func parallel(n, workers int, fn func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for i := 0; i < n && first == nil; i++ {
		select {
		case next <- i:
		case first = <-errs:
		}
	}
	close(next)
	wg.Wait()
	if first == nil {
		select {
		case first = <-errs:
		default:
		}
	}
	return first
}

func createNodes(ctx context.Context, cs kubernetes.Interface, n, workers int) error {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	return parallel(n, workers, func(i int) error {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + strconv.Itoa(i)}, Status: corev1.NodeStatus{
			Allocatable: alloc, Capacity: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
		}}
		_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		return err
	})
}

// startHeartbeats creates each node's Lease and renews them all every 10 s
// until the returned stop is called.
func startHeartbeats(ctx context.Context, cs kubernetes.Interface, n, workers int, writes *atomic.Int64) (stop func(), err error) {
	renew := func(i int) error {
		name := "node-" + strconv.Itoa(i)
		now := metav1.NewMicroTime(time.Now())
		leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
		lease, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: &now}}, metav1.CreateOptions{})
			return err
		}
		lease.Spec.RenewTime = &now
		if _, err = leases.Update(ctx, lease, metav1.UpdateOptions{}); err == nil {
			writes.Add(1)
		}
		return err
	}
	if err := parallel(n, workers, renew); err != nil {
		return nil, err
	}
	return ticker.Every(ctx, 10*time.Second, func(context.Context) {
		_ = parallel(n, workers, renew) // a missed beat is retried on the next tick
	}), nil
}

func currentRevision(ctx context.Context, cs kubernetes.Interface) (int64, error) {
	list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(list.ResourceVersion, 10, 64)
}
