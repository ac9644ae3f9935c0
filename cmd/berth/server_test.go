package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/berth/berth/internal/testkit/ports"
)

// A start-up error (a flag, a directory, a port or a file the server cannot
// use) is a non-zero exit with one line from berth.
func TestServerStartupErrorsAreOneLine(t *testing.T) {
	bin := buildBerth(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	badAdmissionConfig := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(badAdmissionConfig, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n    defaults: {enforce: strictest}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"port in use":          {"--data-dir", t.TempDir(), "--bind-address", "127.0.0.1", "--port", strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)},
		"data dir is file":     {"--data-dir", notADir, "--bind-address", "127.0.0.1", "--port", strconv.Itoa(ports.Free(t))},
		"bad bind address":     {"--bind-address", "not-an-ip"},
		"port out of range":    {"--port", "70000"},
		"no token file":        {"--token-auth-file", filepath.Join(t.TempDir(), "missing.csv")},
		"negative event ttl":   {"--data-dir", t.TempDir(), "--event-ttl", "-1h"},
		"bad admission config": {"--data-dir", t.TempDir(), "--admission-control-config-file", badAdmissionConfig},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"server", "--disable-agent"}, args...)...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("want a non-zero exit, got %v\n%s", err, out)
			}
			last := strings.TrimSpace(string(out))
			if lines := strings.Split(last, "\n"); !strings.HasPrefix(lines[len(lines)-1], "berth: ") {
				t.Errorf("no one-line error:\n%s", out)
			}
		})
	}
}
