package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/berth/berth/internal/testkit/hostcheck"
	"github.com/berth/berth/internal/testkit/images"
)

// crictl drives the real crictl binary (cri-tools v1.37.0, the everyday CRI
// client) against one e2e runtime's socket.
type crictl struct {
	t        *testing.T
	bin      string
	endpoint string
	config   string
}

func newCrictl(t *testing.T, e *e2e) *crictl {
	t.Helper()
	hostcheck.Require(t, hostcheck.Crictl)
	tools, err := hostcheck.ToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	// An empty config of its own, so no /etc/crictl.yaml on the host can
	// point it elsewhere.
	config := filepath.Join(t.TempDir(), "crictl.yaml")
	if err := os.WriteFile(config, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return &crictl{t: t, bin: filepath.Join(tools, "crictl"), endpoint: e.cfg.Listen, config: config}
}

// command is crictl with the global flags; ctx bounds it, so a hung
// command ends the test instead of the test run.
func (c *crictl) command(ctx context.Context, args ...string) *exec.Cmd {
	global := []string{"--config", c.config, "--runtime-endpoint", c.endpoint, "--image-endpoint", c.endpoint, "--timeout", "2m"}
	return exec.CommandContext(ctx, c.bin, append(global, args...)...)
}

// run runs crictl to completion, fails the test unless it exits 0, and
// returns its stdout.
func (c *crictl) run(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := c.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("crictl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// fails runs crictl, fails the test if it exits 0, and returns what it
// printed.
func (c *crictl) fails(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 3*time.Minute)
	defer cancel()
	out, err := c.command(ctx, args...).CombinedOutput()
	if err == nil {
		c.t.Fatalf("crictl %s succeeded, want a failure:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

// json runs the crictl subcommand args[0] with `-o json` output and
// decodes it into v.
func (c *crictl) json(v any, args ...string) {
	c.t.Helper()
	// urfave/cli stops reading flags at the first argument: -o goes first.
	out := c.run(append([]string{args[0], "-o", "json"}, args[1:]...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("crictl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// writeJSON writes v as a crictl config file (pod or container) and
// returns its path.
func writeJSON(t *testing.T, name string, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The crictl -o json shapes the flow reads (protojson of the CRI types).
type (
	crictlMetadata struct {
		Name string `json:"name"`
	}
	crictlImages struct {
		Images []struct {
			ID       string   `json:"id"`
			RepoTags []string `json:"repoTags"`
		} `json:"images"`
	}
	crictlPods struct {
		Items []struct {
			ID       string         `json:"id"`
			State    string         `json:"state"`
			Metadata crictlMetadata `json:"metadata"`
		} `json:"items"`
	}
	crictlContainers struct {
		Containers []struct {
			ID       string         `json:"id"`
			State    string         `json:"state"`
			Metadata crictlMetadata `json:"metadata"`
		} `json:"containers"`
	}
	crictlStatus struct {
		Status struct {
			ID       string         `json:"id"`
			State    string         `json:"state"`
			Metadata crictlMetadata `json:"metadata"`
			LogPath  string         `json:"logPath"`
			ExitCode int            `json:"exitCode"`
			Network  struct {
				IP string `json:"ip"`
			} `json:"network"`
		} `json:"status"`
	}
	crictlStats struct {
		Stats []struct {
			Attributes struct {
				ID string `json:"id"`
			} `json:"attributes"`
			CPU struct {
				UsageCoreNanoSeconds struct {
					Value string `json:"value"`
				} `json:"usageCoreNanoSeconds"`
			} `json:"cpu"`
			Memory struct {
				WorkingSetBytes struct {
					Value string `json:"value"`
				} `json:"workingSetBytes"`
			} `json:"memory"`
		} `json:"stats"`
	}
)

// TestCrictlEverydayFlow drives a real berth runtime with the real crictl
// through the everyday commands, checking what each prints: pull, images,
// runp, create, start, pods, ps, inspect, inspectp, logs -f, exec -it (on a
// pseudo-terminal), attach, port-forward, stats, rmi (refused while in use),
// stopp, rmp, rmi.
func TestCrictlEverydayFlow(t *testing.T) {
	e := newE2E(t)
	c := newCrictl(t, e)

	// pull and images: the ID crictl prints is the one the image list shows.
	ids := map[string]string{}
	for _, ref := range []string{images.Busybox, images.Httpd} {
		out := c.run("pull", ref)
		m := regexp.MustCompile(`Image is up to date for (sha256:[0-9a-f]{64})`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("crictl pull %s printed %q", ref, out)
		}
		ids["docker.io/"+ref] = m[1]
	}
	var imgs crictlImages
	c.json(&imgs, "images")
	for tag, id := range ids {
		if !imagesHave(imgs, tag, id) {
			t.Fatalf("crictl images lacks %s with ID %s: %+v", tag, id, imgs)
		}
	}
	if table := c.run("images"); !strings.Contains(table, "docker.io/berth-test/httpd") {
		t.Fatalf("crictl images table lacks httpd:\n%s", table)
	}

	// runp, create, start.
	pod := map[string]any{
		"metadata": map[string]any{"name": "crictl-flow", "namespace": "e2e", "uid": "crictl-flow-uid"},
		"hostname": "crictl-flow", "log_directory": filepath.Join(e.logsDir, "crictl-flow"), "linux": map[string]any{},
	}
	podFile := writeJSON(t, "pod.json", pod)
	podID := strings.TrimSpace(c.run("runp", podFile))
	container := func(name, image string, extra map[string]any) string {
		cfg := map[string]any{"metadata": map[string]any{"name": name}, "image": map[string]any{"image": image},
			"log_path": name + ".log", "linux": map[string]any{}}
		for k, v := range extra {
			cfg[k] = v
		}
		id := strings.TrimSpace(c.run("create", podID, writeJSON(t, name+".json", cfg), podFile))
		if started := strings.TrimSpace(c.run("start", id)); started != id {
			t.Fatalf("crictl start %s printed %q", id, started)
		}
		return id
	}
	ticker := container("ticker", images.Busybox, map[string]any{
		"command": []string{"sh", "-c", "echo started; i=0; while true; do echo tick-$i; i=$((i+1)); sleep 0.2; done"}})
	web := container("web", images.Httpd, nil)
	reader := container("reader", images.Busybox, map[string]any{
		"command": []string{"sh", "-c", "read line; echo got-$line"}, "stdin": true, "stdin_once": true})

	// pods, ps, inspectp, inspect.
	var pods crictlPods
	c.json(&pods, "pods", "--name", "crictl-flow")
	if len(pods.Items) != 1 || pods.Items[0].ID != podID || pods.Items[0].State != "SANDBOX_READY" {
		t.Fatalf("crictl pods: %+v, want %s ready", pods, podID)
	}
	if table := c.run("pods"); !strings.Contains(table, podID[:13]) || !strings.Contains(table, "Ready") {
		t.Fatalf("crictl pods table lacks the ready pod %s:\n%s", podID, table)
	}
	running := c.containerStates(podID)
	for name, id := range map[string]string{"ticker": ticker, "web": web, "reader": reader} {
		if running[id] != "CONTAINER_RUNNING" {
			t.Fatalf("crictl ps: %s (%s) is %q, want running: %v", name, id, running[id], running)
		}
	}
	var podStatus crictlStatus
	c.json(&podStatus, "inspectp", podID)
	if podStatus.Status.ID != podID || podStatus.Status.State != "SANDBOX_READY" || !e.subnet.Contains(net.ParseIP(podStatus.Status.Network.IP)) {
		t.Fatalf("crictl inspectp: %+v, want %s ready with an address in %s", podStatus.Status, podID, e.subnet)
	}
	var tickerStatus crictlStatus
	c.json(&tickerStatus, "inspect", ticker)
	if tickerStatus.Status.ID != ticker || tickerStatus.Status.State != "CONTAINER_RUNNING" || tickerStatus.Status.Metadata.Name != "ticker" ||
		tickerStatus.Status.LogPath != filepath.Join(e.logsDir, "crictl-flow", "ticker.log") {
		t.Fatalf("crictl inspect: %+v", tickerStatus.Status)
	}

	c.checkLogsFollow(ticker)
	c.checkExecTTY(ticker)
	c.checkAttach(reader)
	c.checkPortForward(podID)
	c.checkStats(ticker)

	// rmi refuses an image a container still uses.
	if out := c.fails("rmi", images.Busybox); !strings.Contains(out, "used") && !strings.Contains(out, "in use") {
		t.Fatalf("crictl rmi of an image in use: %s", out)
	}

	// stopp, rmp, rmi.
	if out := c.run("stopp", podID); !strings.Contains(out, "Stopped sandbox "+podID) {
		t.Fatalf("crictl stopp printed %q", out)
	}
	c.json(&podStatus, "inspectp", podID)
	if podStatus.Status.State != "SANDBOX_NOTREADY" {
		t.Fatalf("crictl inspectp after stopp: %+v", podStatus.Status)
	}
	for id, state := range c.containerStates(podID) {
		if state != "CONTAINER_EXITED" {
			t.Fatalf("container %s is %s after stopp", id, state)
		}
	}
	if out := c.run("rmp", podID); !strings.Contains(out, "Removed sandbox "+podID) {
		t.Fatalf("crictl rmp printed %q", out)
	}
	if left := strings.TrimSpace(c.run("pods", "-q")); left != "" {
		t.Fatalf("pods left after rmp: %q", left)
	}
	out := c.run("rmi", images.Busybox, images.Httpd)
	for tag := range ids {
		if !strings.Contains(out, "Deleted: "+tag) {
			t.Fatalf("crictl rmi printed %q, want %s deleted", out, tag)
		}
	}
	c.json(&imgs, "images")
	for tag, id := range ids {
		if imagesHave(imgs, tag, id) {
			t.Fatalf("%s still listed after rmi: %+v", tag, imgs)
		}
	}
}

func imagesHave(imgs crictlImages, tag, id string) bool {
	for _, img := range imgs.Images {
		for _, t := range img.RepoTags {
			if t == tag && img.ID == id {
				return true
			}
		}
	}
	return false
}

// containerStates maps every container of pod (any state) to its state,
// from crictl ps -a.
func (c *crictl) containerStates(pod string) map[string]string {
	c.t.Helper()
	var list crictlContainers
	c.json(&list, "ps", "-a", "--pod", pod)
	states := map[string]string{}
	for _, ctr := range list.Containers {
		states[ctr.ID] = ctr.State
	}
	return states
}

// checkLogsFollow reads the first lines of `crictl logs -f` while the
// container keeps writing, then stops it, as a user's ^C would.
func (c *crictl) checkLogsFollow(id string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 3*time.Minute)
	defer cancel()
	cmd := c.command(ctx, "logs", "-f", id)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	want := []string{"started", "tick-0", "tick-1", "tick-2"}
	sc := bufio.NewScanner(stdout)
	for i, line := range want {
		if !sc.Scan() {
			c.t.Fatalf("crictl logs -f ended after %d lines: %v", i, sc.Err())
		}
		if sc.Text() != line {
			c.t.Fatalf("crictl logs -f line %d = %q, want %q", i, sc.Text(), line)
		}
	}
}

// checkExecTTY runs an interactive shell through `crictl exec -it` on a
// pseudo-terminal (script(1) provides it): the shell sees a terminal,
// computes what it is asked, and its exit code comes back.
func (c *crictl) checkExecTTY(id string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 3*time.Minute)
	defer cancel()
	line := strings.Join(c.command(ctx, "exec", "-it", id, "sh").Args, " ")
	cmd := exec.CommandContext(ctx, "script", "-qec", line, "/dev/null")
	cmd.Stdin = strings.NewReader("test -t 0 && echo tty-$((6*7)); exit 5\n")
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "tty-42") {
		c.t.Fatalf("crictl exec -it: no tty-42 in the output (err %v):\n%s", err, out)
	}
	if err == nil || !strings.Contains(string(out), "exit code 5") {
		c.t.Fatalf("crictl exec -it: err %v, want the shell's exit code 5 reported:\n%s", err, out)
	}
}

// checkAttach writes a line to a waiting container's stdin through `crictl
// attach -i` and reads its answer on the attached stdout.
func (c *crictl) checkAttach(id string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 3*time.Minute)
	defer cancel()
	cmd := c.command(ctx, "attach", "-i", id)
	cmd.Stdin = strings.NewReader("hello\n")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "got-hello") {
		c.t.Fatalf("crictl attach -i: %v\n%s", err, out)
	}
	var st crictlStatus
	c.json(&st, "inspect", id)
	if st.Status.State != "CONTAINER_EXITED" || st.Status.ExitCode != 0 {
		c.t.Fatalf("attached container after its answer: %+v", st.Status)
	}
}

// checkPortForward forwards a random loopback port to the pod's port 80
// with `crictl port-forward` and fetches the httpd's page through it.
func (c *crictl) checkPortForward(pod string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 3*time.Minute)
	defer cancel()
	cmd := c.command(ctx, "port-forward", pod, ":80")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	forwarding := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> 80`)
	sc := bufio.NewScanner(stdout)
	var addr string
	for addr == "" && sc.Scan() {
		if m := forwarding.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		c.t.Fatalf("crictl port-forward never said where it listens: %v", sc.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }() // its "Handling connection" lines
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("GET through the forwarded port: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != images.HttpdIndex {
		c.t.Fatalf("GET through the forwarded port: %d %q %v, want %q", resp.StatusCode, body, err, images.HttpdIndex)
	}
}

// checkStats reads a running container's CPU and memory with crictl stats.
func (c *crictl) checkStats(id string) {
	c.t.Helper()
	var stats crictlStats
	c.json(&stats, "stats", "--id", id)
	if len(stats.Stats) != 1 || stats.Stats[0].Attributes.ID != id {
		c.t.Fatalf("crictl stats --id %s: %+v", id, stats)
	}
	s := stats.Stats[0]
	if !positive(s.CPU.UsageCoreNanoSeconds.Value) || !positive(s.Memory.WorkingSetBytes.Value) {
		c.t.Fatalf("crictl stats: CPU %q ns, working set %q bytes; want both above zero", s.CPU.UsageCoreNanoSeconds.Value, s.Memory.WorkingSetBytes.Value)
	}
}

func positive(decimal string) bool {
	var n uint64
	_, err := fmt.Sscan(decimal, &n)
	return err == nil && n > 0
}
