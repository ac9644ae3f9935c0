package monitor

import (
	"bytes"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// maxLogLine is where a line without a newline is cut into a partial ("P")
// record, as containerd and CRI-O do (16 KiB).
const maxLogLine = 16 * 1024

// criLog writes the container log in the CRI format kubelet reads:
// "<RFC3339Nano time> <stdout|stderr> <P|F> <content>\n".
type criLog struct {
	path string
	now  func() time.Time

	mu sync.Mutex
	f  io.WriteCloser // nil when the log is discarded
}

func openCRILog(path string, now func() time.Time) (*criLog, error) {
	l := &criLog{path: path, now: now}
	if err := l.Reopen(); err != nil {
		return nil, err
	}
	return l, nil
}

// Reopen closes the log file and opens it again by name, so that a log
// rotated (renamed) by kubelet is continued in a fresh file. It refuses a
// symlink at that name: the monitor writes as root, and the runtime
// refused one when the container was created.
func (l *criLog) Reopen() error {
	if l.path == "" {
		return nil
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return err
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	if old != nil {
		return old.Close()
	}
	return nil
}

func (l *criLog) record(stream string, partial bool, content []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	tag := "F"
	if partial {
		tag = "P"
	}
	var b bytes.Buffer
	b.Grow(len(content) + 64)
	b.WriteString(l.now().Format(time.RFC3339Nano))
	b.WriteByte(' ')
	b.WriteString(stream)
	b.WriteByte(' ')
	b.WriteString(tag)
	b.WriteByte(' ')
	b.Write(content)
	b.WriteByte('\n')
	// A failing log (disk full) must not stop the container: the record is lost.
	_, _ = l.f.Write(b.Bytes())
}

func (l *criLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// lineSplitter turns a byte stream into log records: one "F" record per
// line, long lines first cut into "P" records of maxLogLine bytes.
type lineSplitter struct {
	log    *criLog
	stream string
	buf    []byte
}

func (s *lineSplitter) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		switch {
		case i >= 0 && i <= maxLogLine:
			s.log.record(s.stream, false, s.buf[:i])
			s.buf = s.buf[i+1:]
		case len(s.buf) >= maxLogLine:
			s.log.record(s.stream, true, s.buf[:maxLogLine])
			s.buf = s.buf[maxLogLine:]
		default:
			// Keep the remainder; compact so the buffer does not grow forever.
			s.buf = append(s.buf[:0:0], s.buf...)
			return len(p), nil
		}
	}
}

// Flush records what is left of an unterminated last line as partial, as
// containerd's logger does: readers then give it back without a newline the
// container never wrote (`echo -n DONE` logs "DONE", and a termination
// message taken from the log is exactly that).
func (s *lineSplitter) Flush() {
	if len(s.buf) > 0 {
		s.log.record(s.stream, true, s.buf)
		s.buf = nil
	}
}
