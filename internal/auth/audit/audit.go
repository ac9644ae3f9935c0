// Package audit is berth's audit log: one JSON line per request that was
// denied (401, 403) or asked to change state, in the upstream
// audit.k8s.io/v1 Event format, written when the response is complete.
// k8s.io/apiserver records the events (its audit filters) and writes them
// (its log backend); this package fixes the policy and chooses which
// events reach the file.
package audit

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"

	"gopkg.in/natefinch/lumberjack.v2"

	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	auditlog "k8s.io/apiserver/plugin/pkg/audit/log"
)

// Log appends audit events to a file, rotated by size.
type Log struct {
	file    io.WriteCloser
	backend audit.Backend
	closed  sync.Once
}

// Rotation is when the log file is rotated and how many old files are
// kept, as kube-apiserver's --audit-log-maxsize, --audit-log-maxbackup and
// --audit-log-maxage mean it.
type Rotation struct {
	// MaxSizeMB is the size in megabytes at which the file is rotated
	// (renamed with a timestamp, a new one started); 0 means 100.
	MaxSizeMB int
	// MaxBackups is how many rotated files are kept; 0 keeps all (unless
	// MaxAgeDays removes them).
	MaxBackups int
	// MaxAgeDays is how many days a rotated file is kept; 0 keeps it
	// regardless of age.
	MaxAgeDays int
}

// Validate refuses negative limits.
func (r Rotation) Validate() error {
	switch {
	case r.MaxSizeMB < 0:
		return fmt.Errorf("audit log max size %d MB: must not be negative", r.MaxSizeMB)
	case r.MaxBackups < 0:
		return fmt.Errorf("audit log max backups %d: must not be negative", r.MaxBackups)
	case r.MaxAgeDays < 0:
		return fmt.Errorf("audit log max age %d days: must not be negative", r.MaxAgeDays)
	}
	return nil
}

// Open appends to path (created 0600: the log names users and objects;
// rotated files keep that mode). Rotation is lumberjack's, the writer
// kube-apiserver uses: it renames a full file and starts a new one
// between two writes, and each event is one write, so no line is split.
// lumberjack removes old files in one background goroutine per log that it
// never stops; the server opens one log per process.
func Open(path string, rotation Rotation) (*Log, error) {
	if err := rotation.Validate(); err != nil {
		return nil, err
	}
	// Create the file first, so that it exists with its mode (and a bad
	// path fails here, not at the first event).
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	w := &lumberjack.Logger{Filename: path, MaxSize: rotation.MaxSizeMB, MaxBackups: rotation.MaxBackups, MaxAge: rotation.MaxAgeDays}
	return &Log{file: w, backend: auditlog.NewBackend(w, auditlog.FormatJson, auditv1.SchemeGroupVersion)}, nil
}

// Policy records every request at the Metadata level (who, what verb, which
// object, the response code; no bodies, which may hold secrets). Which
// events are kept is Sink's choice, because the response code is known only
// once the response starts.
func (l *Log) Policy() audit.PolicyRuleEvaluator {
	return policy.NewPolicyRuleEvaluator(&auditinternal.Policy{
		Rules:      []auditinternal.PolicyRule{{Level: auditinternal.LevelMetadata}},
		OmitStages: []auditinternal.Stage{auditinternal.StageRequestReceived},
	})
}

// Sink writes the events worth keeping: denied requests and requests that
// ask to change state (whether or not they succeed).
func (l *Log) Sink() audit.Sink { return filteredSink{l.backend} }

// Close closes the file; events after it are dropped (and counted by
// k8s.io/apiserver's audit metrics).
func (l *Log) Close() error {
	var err error
	l.closed.Do(func() { err = l.file.Close() })
	return err
}

type filteredSink struct{ next audit.Sink }

func (s filteredSink) ProcessEvents(events ...*auditinternal.Event) bool {
	ok := true
	for _, ev := range events {
		if keep(ev) {
			ok = s.next.ProcessEvents(ev) && ok
		}
	}
	return ok
}

// keep reports whether ev belongs in the audit log: a denied request
// (401 or 403), or one whose verb changes state; one line per request, at
// ResponseComplete. The exception is a failed authentication, which
// k8s.io/apiserver reports only at ResponseStarted (there is no user to
// go on with).
func keep(ev *auditinternal.Event) bool {
	code := int32(0)
	if ev.ResponseStatus != nil {
		code = ev.ResponseStatus.Code
	}
	if ev.Stage == auditinternal.StageResponseStarted {
		return code == http.StatusUnauthorized
	}
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		return true
	}
	switch ev.Verb {
	case "get", "list", "watch", "head", "options":
		return false
	}
	return true
}
