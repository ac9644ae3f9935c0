package pods

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// relister notices runtime changes (a container exited, a sandbox died)
// and wakes the pod's worker. It follows CRI GetContainerEvents when the
// runtime offers it, and relists every RelistPeriod in any case, since
// events can be lost and containerd 1.6 has no event stream.
type relister struct {
	m    *Manager
	last map[string]string // container or sandbox ID -> state
}

func (r *relister) run(ctx context.Context) {
	events := make(chan struct{})
	go func() {
		defer close(events)
		r.followEvents(ctx)
	}()
	defer func() { <-events }()
	t := time.NewTicker(r.m.cfg.RelistPeriod)
	defer t.Stop()
	for {
		r.relist(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *relister) relist(ctx context.Context) {
	sbs, err := r.m.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		r.m.log.Warn("relist sandboxes", "err", err)
		return
	}
	cs, err := r.m.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		r.m.log.Warn("relist containers", "err", err)
		return
	}
	now := map[string]string{}
	changed := map[types.UID]bool{}
	note := func(id, state, uid string) {
		if uid == "" {
			return // not a pod of an agent
		}
		now[id] = state
		if r.last == nil || r.last[id] != state {
			changed[types.UID(uid)] = true
		}
	}
	for _, sb := range sbs.Items {
		note(sb.Id, sb.State.String(), sb.Labels[labelPodUID])
	}
	for _, c := range cs.Containers {
		note(c.Id, c.State.String(), c.Labels[labelPodUID])
	}
	r.last = now
	for uid := range changed {
		r.m.wake(ctx, uid)
	}
}

func (r *relister) followEvents(ctx context.Context) {
	stream, err := r.m.rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err == nil {
		for {
			ev, err := stream.Recv()
			if err != nil {
				break
			}
			if uid := ev.GetPodSandboxStatus().GetMetadata().GetUid(); uid != "" {
				r.m.wake(ctx, types.UID(uid))
			}
		}
	}
	if status.Code(err) == codes.Unimplemented {
		r.m.log.Info("runtime has no container event stream; relisting only")
	}
}
