package pods

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/kubernetes/pkg/probe"
	httpprobe "k8s.io/kubernetes/pkg/probe/http"
)

type probeKind string

const (
	liveness  probeKind = "Liveness"
	readiness probeKind = "Readiness"
	startup   probeKind = "Startup"
)

// probeKey names one probe of one container instance.
type probeKey struct {
	pod         types.UID
	containerID string
	kind        probeKind
}

// prober runs the containers' probes, one goroutine per probe of each
// running container instance, and keeps their latest results.
type prober struct {
	m       *Manager
	mu      sync.Mutex
	workers map[probeKey]context.CancelFunc
	// triggers make a worker probe now instead of at its next period.
	triggers map[probeKey]chan struct{}
	results  map[probeKey]bool // absent: no result yet
}

func newProber(m *Manager) *prober {
	return &prober{m: m, workers: map[probeKey]context.CancelFunc{}, triggers: map[probeKey]chan struct{}{}, results: map[probeKey]bool{}}
}

// result returns the latest result of a probe and whether there is one.
func (p *prober) result(id string, kind probeKind) (ok, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, v := range p.results {
		if k.containerID == id && k.kind == kind {
			return v, true
		}
	}
	return false, false
}

// sync starts probes for the pod's running containers (ids maps container
// name to the running instance's ID) and stops those of instances gone.
// Probes without a host go to podIP.
func (p *prober) sync(ctx context.Context, pod *corev1.Pod, ids map[string]string, podIP string) {
	pod = pod.DeepCopy()
	pod.Status.PodIP = podIP
	want := map[probeKey]func(context.Context, <-chan struct{}){}
	for _, c := range containersAndSidecars(pod) {
		id, running := ids[c.Name]
		if !running {
			continue
		}
		for kind, probe := range map[probeKind]*corev1.Probe{liveness: c.LivenessProbe, readiness: c.ReadinessProbe, startup: c.StartupProbe} {
			if probe != nil {
				key := probeKey{pod.UID, id, kind}
				want[key] = func(ctx context.Context, trigger <-chan struct{}) { p.run(ctx, pod, c, key, probe, trigger) }
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, cancel := range p.workers {
		if _, keep := want[key]; !keep && key.pod == pod.UID {
			cancel()
			delete(p.workers, key)
			delete(p.triggers, key)
			delete(p.results, key)
		}
	}
	for key, run := range want {
		if _, running := p.workers[key]; running {
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		trigger := make(chan struct{}, 1)
		p.workers[key], p.triggers[key] = cancel, trigger
		p.m.wg.Add(1)
		go func() {
			defer p.m.wg.Done()
			run(wctx, trigger)
		}()
	}
}

// stopPod stops every probe of a pod.
func (p *prober) stopPod(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, cancel := range p.workers {
		if key.pod == uid {
			cancel()
			delete(p.workers, key)
			delete(p.triggers, key)
		}
	}
	for key := range p.results {
		if key.pod == uid {
			delete(p.results, key)
		}
	}
}

// run probes every periodSeconds after initialDelaySeconds, and at once
// when triggered, and records a result when success/failure thresholds are
// reached; a failed liveness probe (or a startup probe out of attempts)
// kills the container, which the pod worker then restarts by the restart
// policy. A startup probe's success triggers the container's readiness
// probe, as the kubelet's status manager triggers it, so that readiness
// does not wait up to a period for the next tick.
func (p *prober) run(ctx context.Context, pod *corev1.Pod, c *corev1.Container, key probeKey, probe *corev1.Probe, trigger <-chan struct{}) {
	period := time.Duration(max(probe.PeriodSeconds, 1)) * time.Second
	timeout := time.Duration(max(probe.TimeoutSeconds, 1)) * time.Second
	successThreshold, failureThreshold := max(probe.SuccessThreshold, 1), max(probe.FailureThreshold, 1)
	if !sleep(ctx, time.Duration(probe.InitialDelaySeconds)*time.Second) {
		return
	}
	var successes, failures int32
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if key.kind != startup && !p.started(pod, c, key.containerID) {
			// Liveness and readiness wait for the startup probe.
		} else if warning, err := p.m.probeOnce(ctx, pod, c, key.containerID, probe, timeout); err == nil {
			if warning != "" {
				p.m.event(pod, corev1.EventTypeWarning, "ProbeWarning", fmt.Sprintf("%s probe warning: %s", key.kind, warning))
			}
			successes, failures = successes+1, 0
			if successes >= successThreshold && p.record(key, true) {
				p.m.wake(ctx, pod.UID)
			}
			if key.kind == startup && successes >= successThreshold {
				p.trigger(probeKey{key.pod, key.containerID, readiness})
				return // a startup probe stops once it succeeded
			}
		} else if ctx.Err() == nil {
			successes, failures = 0, failures+1
			p.m.event(pod, corev1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe failed: %v", key.kind, err))
			if failures >= failureThreshold {
				if p.record(key, false) {
					p.m.wake(ctx, pod.UID)
				}
				if key.kind != readiness {
					p.kill(ctx, pod, c, key, probe)
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-trigger:
		}
	}
}

// trigger makes key's worker, if it runs, probe now.
func (p *prober) trigger(key probeKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case p.triggers[key] <- struct{}{}:
	default: // already triggered, or no such worker
	}
}

func (p *prober) started(pod *corev1.Pod, c *corev1.Container, id string) bool {
	if c.StartupProbe == nil {
		return true
	}
	ok, _ := p.result(id, startup)
	return ok
}

// record stores a result and reports whether it changed.
func (p *prober) record(key probeKey, ok bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	prev, known := p.results[key]
	p.results[key] = ok
	return !known || prev != ok
}

// kill stops a container whose liveness or startup probe failed, giving it
// the probe's terminationGracePeriodSeconds when set, else the pod's, as
// the kubelet does.
func (p *prober) kill(ctx context.Context, pod *corev1.Pod, c *corev1.Container, key probeKey, probe *corev1.Probe) {
	p.m.event(pod, corev1.EventTypeNormal, "Killing", fmt.Sprintf("Container %s failed %s probe, will be restarted", c.Name, key.kind))
	grace := gracePeriod(pod)
	if probe.TerminationGracePeriodSeconds != nil {
		grace = *probe.TerminationGracePeriodSeconds
	}
	if _, err := p.m.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: key.containerID, Timeout: grace}); err != nil {
		p.m.log.Warn("stop unhealthy container", "id", key.containerID, "err", err)
	}
	p.m.wake(ctx, pod.UID)
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// probeOnce runs one probe; a nil error is success, and a success may
// come with a warning (an HTTP redirect to another host not followed), as
// upstream's probers report it.
func (m *Manager) probeOnce(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string, probe *corev1.Probe, timeout time.Duration) (warning string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h := probe.ProbeHandler
	switch {
	case h.Exec != nil:
		return "", m.execSucceeds(ctx, id, h.Exec.Command, timeout)
	case h.HTTPGet != nil:
		return m.probeHTTP(ctx, pod, c, h.HTTPGet)
	case h.TCPSocket != nil:
		port, err := resolvePort(h.TCPSocket.Port, c)
		if err != nil {
			return "", err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(probeHost(pod, h.TCPSocket.Host), strconv.Itoa(port)))
		if err != nil {
			return "", err
		}
		return "", conn.Close()
	case h.GRPC != nil:
		return "", probeGRPC(ctx, probeHost(pod, ""), int(h.GRPC.Port), h.GRPC.Service)
	}
	return "", fmt.Errorf("probe has no handler")
}

func probeHost(pod *corev1.Pod, host string) string {
	if host != "" {
		return host
	}
	return pod.Status.PodIP
}

// httpProber is upstream's HTTP prober, one for every probe as the
// kubelet holds one (it keeps its transport).
var httpProber = httpprobe.New(false)

// probeHTTP is an HTTP probe or hook as the kubelet makes it: upstream's
// request (the path's query kept, the probe's headers, kube-probe's user
// agent) and prober (2xx and 3xx succeed, HTTPS unverified, redirects to
// other hosts not followed: a success with a warning, its output).
func (m *Manager) probeHTTP(ctx context.Context, pod *corev1.Pod, c *corev1.Container, g *corev1.HTTPGetAction) (warning string, err error) {
	req, err := httpprobe.NewRequestForHTTPGetAction(g, c, pod.Status.PodIP, "probe")
	if err != nil {
		return "", err
	}
	timeout := time.Second
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline)
	}
	result, output, err := httpProber.Probe(req.WithContext(ctx), timeout)
	switch {
	case err != nil:
		return "", err
	case result == probe.Failure:
		return "", errors.New(output)
	case result == probe.Warning:
		return output, nil
	}
	return "", nil
}

func probeGRPC(ctx context.Context, host string, port int, service *string) error {
	conn, err := grpc.NewClient(net.JoinHostPort(host, strconv.Itoa(port)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	req := &healthpb.HealthCheckRequest{}
	if service != nil {
		req.Service = *service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, req)
	if err != nil {
		return err
	}
	if resp.Status != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("service unhealthy (responded with %q)", resp.Status)
	}
	return nil
}

// resolvePort turns a probe port (number or container port name) into a number.
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("no port named %q in container %s", p.StrVal, c.Name)
}
