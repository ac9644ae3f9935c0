// Package crilog reads the container log files of the CRI log format, as
// the kubelet does for `kubectl logs` and for termination messages.
package crilog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// The CRI log format is one record per line: "TIMESTAMP STREAM TAG CONTENT",
// TIMESTAMP in RFC 3339 with nanoseconds, STREAM stdout or stderr, TAG F for
// a full line or P for a partial one continued by the next record. The
// parser lives in k8s.io/kubernetes/pkg/kubelet/kuberuntime/logs and
// k8s.io/cri-client, neither of which is in berth's module graph at v0.37.2,
// so this is a small reader of our own.

// logRecord is one parsed line of a CRI log file.
type logRecord struct {
	time    time.Time
	stream  string
	partial bool
	content []byte
}

func parseCRILine(line []byte) (logRecord, error) {
	fields := bytes.SplitN(line, []byte{' '}, 4)
	if len(fields) < 3 {
		return logRecord{}, fmt.Errorf("CRI log line %q: want TIMESTAMP STREAM TAG CONTENT", line)
	}
	ts, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return logRecord{}, fmt.Errorf("CRI log line timestamp: %w", err)
	}
	rec := logRecord{time: ts, stream: string(fields[1])}
	if rec.stream != "stdout" && rec.stream != "stderr" {
		return logRecord{}, fmt.Errorf("CRI log line stream %q: want stdout or stderr", rec.stream)
	}
	switch string(fields[2]) {
	case "P":
		rec.partial = true
	case "F":
	default:
		return logRecord{}, fmt.Errorf("CRI log line tag %q: want P or F", fields[2])
	}
	if len(fields) == 4 {
		rec.content = fields[3]
	}
	return rec, nil
}

// LogOptions select and shape what ReadLog writes, as the kubelet's
// /containerLogs query parameters do.
type LogOptions struct {
	Follow     bool
	TailLines  *int64      // only the last N lines; nil for all
	Since      time.Time   // skip records older than this; zero for all
	Timestamps bool        // prefix each line with its RFC 3339 timestamp
	LimitBytes *int64      // stop after this many bytes; nil for no limit
	Running    func() bool // while following: is the container still running?
	// PollInterval is how often a followed file is checked for growth.
	PollInterval time.Duration
}

var errLimitReached = errors.New("limit reached")

// ReadLog writes the log file at path to w as opts ask. Following, it
// returns when ctx ends, or once the file is drained and opts.Running
// reports the container stopped.
func ReadLog(ctx context.Context, path string, w io.Writer, opts LogOptions) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open container log: %w", err)
	}
	defer f.Close()
	if opts.TailLines != nil {
		if err := seekTail(f, *opts.TailLines); err != nil {
			return err
		}
	}
	out := &logWriter{w: w, opts: opts}
	if opts.LimitBytes != nil {
		out.left = *opts.LimitBytes
	}
	r := bufio.NewReader(f)
	var pending []byte // an unterminated last line, completed by a later read
	for {
		chunk, err := r.ReadBytes('\n')
		pending = append(pending, chunk...)
		if err == nil {
			if werr := out.write(bytes.TrimSuffix(pending, []byte{'\n'})); werr != nil {
				if errors.Is(werr, errLimitReached) {
					return nil
				}
				return werr
			}
			pending = pending[:0]
			continue
		}
		if !errors.Is(err, io.EOF) {
			return fmt.Errorf("read container log: %w", err)
		}
		if !opts.Follow {
			return nil
		}
		// Check Running before waiting, then read once more: a record
		// written just before the container stopped is not lost. A stopped
		// container's unterminated last record never completes: drop it.
		if opts.Running != nil && !opts.Running() {
			if _, err := r.Peek(1); err != nil {
				return nil
			}
			continue
		}
		if err := sleep(ctx, opts.PollInterval); err != nil {
			return nil
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		d = 100 * time.Millisecond
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// logWriter turns records into the output stream.
type logWriter struct {
	w    io.Writer
	opts LogOptions
	left int64
	// midLine is set after a partial record: its continuation gets no
	// timestamp prefix.
	midLine bool
}

func (lw *logWriter) write(line []byte) error {
	rec, err := parseCRILine(line)
	if err != nil {
		return err
	}
	if !lw.opts.Since.IsZero() && rec.time.Before(lw.opts.Since) {
		lw.midLine = rec.partial
		return nil
	}
	var buf []byte
	if lw.opts.Timestamps && !lw.midLine {
		buf = append(buf, rec.time.Format(time.RFC3339Nano)...)
		buf = append(buf, ' ')
	}
	buf = append(buf, rec.content...)
	if !rec.partial {
		buf = append(buf, '\n')
	}
	lw.midLine = rec.partial
	limited := false
	if lw.opts.LimitBytes != nil {
		if int64(len(buf)) >= lw.left {
			buf, limited = buf[:lw.left], true
		}
		lw.left -= int64(len(buf))
	}
	if _, err := lw.w.Write(buf); err != nil {
		return err
	}
	if limited {
		return errLimitReached
	}
	return nil
}

// seekTail positions f at the start of the last n full lines: records
// after the n-th last F record from the end.
func seekTail(f *os.File, n int64) error {
	if n < 0 {
		return nil
	}
	r := bufio.NewReader(f)
	var starts []int64 // offsets where a logical line starts
	var off int64
	lineStart := true
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if lineStart {
				starts = append(starts, off)
			}
			rec, perr := parseCRILine(bytes.TrimSuffix(line, []byte{'\n'}))
			lineStart = perr != nil || !rec.partial
			off += int64(len(line))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return fmt.Errorf("read container log: %w", err)
			}
			break
		}
	}
	var pos int64 // fewer than n lines: all of them
	switch {
	case n == 0:
		pos = off
	case int64(len(starts)) > n:
		pos = starts[int64(len(starts))-n]
	}
	if _, err := f.Seek(pos, io.SeekStart); err != nil {
		return fmt.Errorf("seek container log: %w", err)
	}
	return nil
}
