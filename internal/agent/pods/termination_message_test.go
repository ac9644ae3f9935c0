package pods

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The termination message follows the kubelet: the file the container
// wrote, else (FallbackToLogsOnError, a failure) the log's last 80 lines
// capped at its last 2048 bytes; the runtime's own message comes first.
func TestTerminationMessageAsTheKubelet(t *testing.T) {
	dir := t.TempDir()
	m := &Manager{cfg: Config{DataDir: dir}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}}
	var log strings.Builder
	for i := range 100 {
		fmt.Fprintf(&log, "2026-12-05T01:00:00.%09dZ stdout F line %d\n", i, i)
	}
	logPath := filepath.Join(dir, "0.log")
	if err := os.WriteFile(logPath, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	fallback := &corev1.Container{Name: "c", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}
	status := func(exit int32, message string) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, ExitCode: exit, Message: message, LogPath: logPath}
	}

	got := m.terminationMessage(pod, fallback, status(1, ""))
	if !strings.HasSuffix(got, "line 99\n") || strings.Contains(got, "line 19\n") || len(got) > terminationLogBytes {
		t.Errorf("a failed container's fallback message (%d bytes) = %q..., want the log's end within 80 lines and 2048 bytes", len(got), got[:min(len(got), 40)])
	}
	if got := m.terminationMessage(pod, fallback, status(0, "")); got != "" {
		t.Errorf("a container that succeeded: %q, want no message from its log", got)
	}
	file := &corev1.Container{Name: "c", TerminationMessagePolicy: corev1.TerminationMessageReadFile}
	if got := m.terminationMessage(pod, file, status(1, "OOMKilled")); got != "OOMKilled" {
		t.Errorf("File policy without a file: %q, want only the runtime's message", got)
	}
	termination := filepath.Join(dir, "pods", "uid-1", "containers", "c", "0.termination-log")
	if err := os.MkdirAll(filepath.Dir(termination), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(termination, []byte("DONE"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := m.terminationMessage(pod, fallback, status(1, "")); got != "DONE" {
		t.Errorf("with the file written: %q, want the file's content", got)
	}
	if got := m.terminationMessage(pod, file, status(2, "runtime says")); got != "runtime says: DONE" {
		t.Errorf("the runtime's message and the file's: %q, want both, runtime's first", got)
	}
}

// The file a container writes its message to is writable by any user the
// container runs as, whatever the agent's umask.
func TestTerminationMessageFileIsWritableByAnyUser(t *testing.T) {
	m := &Manager{cfg: Config{DataDir: t.TempDir()}}
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path, err := m.terminationMessageFile(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}}, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o666 {
		t.Errorf("%s has mode %v, want 0666 (a non-root container writes it)", path, st.Mode().Perm())
	}
}
