package main

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
)

// The paced phase creates pods at a fixed rate that both servers sustain.
// The create phase's clients each wait for their previous call (a closed
// loop), so its latencies are, by Little's law, about clients / throughput:
// they restate the create rate. Started on a clock whatever earlier calls
// take (an open loop), the paced creates show what one pod costs to reach
// its node when the server is not saturated.
const (
	pacedPods = 1000
	pacedRate = 200 // pods per second, a fifth of what kube-apiserver sustains here
)

// createPodsPaced creates pods [0,n) one every 1/perSecond, each call in
// its own goroutine on client i mod len(clients) (createTimed).
func createPodsPaced(ctx context.Context, clients []kubernetes.Interface, w *nodeWatchers, s shape, n, perSecond int) phase {
	var (
		wg     sync.WaitGroup
		failed tally
	)
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	defer tick.Stop()
	begin := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
		cs := clients[i%len(clients)]
		wg.Go(func() { failed.add(createTimed(ctx, cs, w, s, i)) })
	}
	wg.Wait()
	return failed.phase(ctx, n, begin)
}
