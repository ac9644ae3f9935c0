// Package testio holds small I/O helpers tests share: a buffer safe for a
// writer goroutine and a reader, and a file written for a test to read.
package testio

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// SyncBuffer is a bytes.Buffer safe for goroutines writing into it (a
// logger, a process's output) and a test reading it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// WriteFile writes content to a file named name in the test's temporary
// directory and returns its path.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
