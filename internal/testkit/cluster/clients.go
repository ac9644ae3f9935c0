package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth/berth/internal/auth/bootstraptoken"
	"github.com/berth/berth/internal/pki"
	"github.com/berth/berth/internal/testkit/wait"
)

// defaultKubectlTimeout bounds one `berth kubectl` run unless Options say otherwise.
const defaultKubectlTimeout = 2 * time.Minute

// restConfigOrErr reads the admin kubeconfig, dialling through opts.Dial.
func (s *Server) restConfigOrErr() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Dial = s.opts.Dial
	return cfg, nil
}

// RESTConfig is a fresh copy of the admin client configuration, for a
// client with settings of its own (rate limits, timeouts, failover).
func (s *Server) RESTConfig(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := s.restConfigOrErr()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// UserClient is a client for a user holding a client certificate the
// cluster's client CA signed for id, as an operator hands out.
func (s *Server) UserClient(t testing.TB, id pki.Identity) kubernetes.Interface {
	t.Helper()
	clientCA, err := pki.LoadOrCreateCA(filepath.Join(s.DataDir, "pki"), "client-ca")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := clientCA.Issue(id)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.RESTConfig(t)
	cfg.CertFile, cfg.KeyFile = "", ""
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return kubernetes.NewForConfigOrDie(cfg)
}

// BearerClient is a client that presents only token.
func (s *Server) BearerClient(t testing.TB, token string) kubernetes.Interface {
	t.Helper()
	cfg := rest.AnonymousClientConfig(s.RESTConfig(t))
	cfg.BearerToken = token
	return kubernetes.NewForConfigOrDie(cfg)
}

// JoinToken waits for the default join token the server writes to
// DATA_DIR/token (after it starts serving) and returns it.
func (s *Server) JoinToken(t testing.TB) bootstraptoken.JoinToken {
	t.Helper()
	path := filepath.Join(s.DataDir, "token")
	var token bootstraptoken.JoinToken
	wait.UntilNil(t, readyTimeout, "the default join token in "+path, func() error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		token, err = bootstraptoken.ParseJoinToken(strings.TrimSpace(string(data)))
		return err
	})
	return token
}

// Kubectl runs `berth kubectl ARGS` with the admin kubeconfig and default
// flags, stdin as its input, and returns its standard output; unless it
// exits 0, the test fails with its error output and the server's log.
func (s *Server) Kubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := s.kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("berth kubectl %s: %v\n%s\n%s", strings.Join(args, " "), err, errOut, s.tail())
	}
	return out
}

// KubectlOutput runs `berth kubectl ARGS` as Kubectl does and returns its
// standard and error output together and whether it exited 0.
func (s *Server) KubectlOutput(t testing.TB, stdin string, args ...string) (string, bool) {
	t.Helper()
	out, errOut, err := s.kubectl(t, stdin, args...)
	return out + errOut, err == nil
}

func (s *Server) kubectl(t testing.TB, stdin string, args ...string) (stdout, stderr string, err error) {
	timeout := s.opts.KubectlTimeout
	if timeout == 0 {
		timeout = defaultKubectlTimeout
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := s.KubectlCommand(ctx, t, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// KubectlCommand is `berth kubectl ARGS` with the admin kubeconfig and a
// home of its own, inside the server's network namespace if it has one,
// for a test that runs it itself (a long-running logs -f or port-forward).
func (s *Server) KubectlCommand(ctx context.Context, t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	argv := append([]string{s.bin, "kubectl"}, args...)
	if s.opts.NetNS != "" {
		argv = append([]string{"nsenter", "--net=" + NetNSPath(s.opts.NetNS), "--"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.Kubeconfig, "HOME="+t.TempDir())
	return cmd
}
