package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/scheduler"
	"github.com/berth/berth/internal/testkit/wait"
)

// Client limits both schedulers get: what berth server gives its own
// components (internal/server loopbackConfig). kube-scheduler's defaults
// (50 QPS, burst 100) would cap it far below what is measured here.
const (
	schedulerQPS   = 5000
	schedulerBurst = 10000
)

// schedulerUnderTest is one scheduler measured in -peer mode.
type schedulerUnderTest struct {
	name      string // column heading
	namespace string // where its pods are created
	// start runs the scheduler until the returned stop.
	start func(ctx context.Context) (stop func(), err error)
}

// runSideBySide measures berth's scheduler, then kube-scheduler, each on
// its own o.pods pods, against the one berth server (started with
// DisableScheduler). Both reach its HTTPS API directly, as
// system:kube-scheduler: berth serves everything kube-scheduler's default
// profile lists and watches (the collections it has nothing for read-only
// and empty).
func runSideBySide(ctx context.Context, cs kubernetes.Interface, dir string, port int, o options, leaseWrites *atomic.Int64) (string, error) {
	kubeconfig, err := schedulerKubeconfig(dir, fmt.Sprintf("https://127.0.0.1:%d", port))
	if err != nil {
		return "", err
	}
	schedCfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return "", err
	}
	schedCfg.QPS, schedCfg.Burst = schedulerQPS, schedulerBurst
	kubeconfigPath := filepath.Join(dir, "kube-scheduler.kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return "", err
	}

	var results []measurement
	for _, s := range []schedulerUnderTest{berthScheduler(schedCfg), kubeScheduler(o.peerBinary, o.peerLog, dir, kubeconfigPath)} {
		m, err := measureScheduler(ctx, cs, s, o, leaseWrites)
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.name, err)
		}
		results = append(results, m)
	}
	return sideBySideMarkdown(o, results[0], results[1]), nil
}

func measureScheduler(ctx context.Context, cs kubernetes.Interface, s schedulerUnderTest, o options, leaseWrites *atomic.Int64) (measurement, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return measurement{}, err
	}
	stop, err := s.start(ctx)
	if err != nil {
		return measurement{}, err
	}
	defer stop()
	// The clock starts only once the scheduler has bound a pod: its
	// start-up and informer sync are not what is measured.
	if err := warmUp(ctx, cs, s.namespace); err != nil {
		return measurement{}, err
	}
	return measurePhase(ctx, cs, s.namespace, o.pods, o.clients, leaseWrites)
}

// warmUp creates one pod and waits until a scheduler binds it.
func warmUp(ctx context.Context, cs kubernetes.Interface, namespace string) error {
	pods := cs.CoreV1().Pods(namespace)
	if _, err := pods.Create(ctx, benchPod(namespace, "warm-up"), metav1.CreateOptions{}); err != nil {
		return err
	}
	err := wait.PollTrue(ctx, 2*time.Minute, "the warm-up pod to be bound", func(ctx context.Context) (bool, error) {
		pod, err := pods.Get(ctx, "warm-up", metav1.GetOptions{})
		return err == nil && pod.Spec.NodeName != "", nil
	})
	if err != nil {
		return err
	}
	return nil
}

// schedulerKubeconfig is a kubeconfig for berth's API at server as
// system:kube-scheduler, from the CAs in the server's data directory.
func schedulerKubeconfig(dir, server string) ([]byte, error) {
	pkiDir := filepath.Join(dir, "pki")
	clientCA, err := pki.LoadOrCreateCA(pkiDir, "client-ca")
	if err != nil {
		return nil, err
	}
	serverCA, err := pki.LoadOrCreateCA(pkiDir, "server-ca")
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := clientCA.Issue(pki.SchedulerIdentity)
	if err != nil {
		return nil, err
	}
	return pki.Kubeconfig(pki.KubeconfigData{Server: server, CAPEM: serverCA.CertPEM, CertPEM: certPEM, KeyPEM: keyPEM,
		UserName: pki.SchedulerIdentity.CommonName})
}

// berthScheduler is internal/scheduler with the settings berth server
// gives it, run in this process.
func berthScheduler(cfg *rest.Config) schedulerUnderTest {
	return schedulerUnderTest{name: "berth scheduler", namespace: "bench-berth",
		start: func(ctx context.Context) (func(), error) {
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				done <- scheduler.New(scheduler.Config{Client: client, Logger: warnLogger().With("component", "scheduler")}).Run(ctx)
			}()
			return func() { cancel(); <-done }, nil
		}}
}

// kubeScheduler runs the kube-scheduler binary as a child process.
func kubeScheduler(bin, logPath, dir, kubeconfigPath string) schedulerUnderTest {
	return schedulerUnderTest{name: "kube-scheduler v1.37.2", namespace: "bench-kube-scheduler",
		start: func(ctx context.Context) (func(), error) {
			config, err := writeKubeSchedulerConfig(dir, kubeconfigPath)
			if err != nil {
				return nil, err
			}
			return startProcess(ctx, bin, logPath, "--config", config, "--secure-port=0")
		}}
}

// writeKubeSchedulerConfig writes a KubeSchedulerConfiguration that uses
// kubeconfigPath and returns its path: the default profile, every default
// plugin enabled, only the scheduler name and client limits set and
// leader election off.
func writeKubeSchedulerConfig(dir, kubeconfigPath string) (string, error) {
	config := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: %d
  burst: %d
leaderElection:
  leaderElect: false
profiles:
- schedulerName: %s
`, kubeconfigPath, schedulerQPS, schedulerBurst, scheduler.DefaultName)
	configPath := filepath.Join(dir, "kube-scheduler.yaml")
	return configPath, os.WriteFile(configPath, []byte(config), 0o600)
}

// startProcess runs bin with its output in logPath; it dies with this
// program (Pdeathsig). stop sends SIGTERM and waits, killing it after a grace.
func startProcess(ctx context.Context, bin, logPath string, args ...string) (stop func(), err error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); log.Close() }()
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			if err := <-exited; err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintf(os.Stderr, "bench/scheduler: %s: %v\n", bin, err)
			}
		}
	}, nil
}
