package apiserver

import (
	"bufio"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
)

// panicAnswer is kube-apiserver's text for a request whose handler panicked.
const panicAnswer = "This request caused apiserver to panic. Look in the logs for details."

// withPanicRecovery answers a request whose handler panicked with a 500
// Status and logs the panic with its stack, so one bad request costs only
// itself. It stands where kube-apiserver's server/filters.WithPanicRecovery
// stands in the chain, but is berth's own: upstream's answers in plain text
// and then re-panics through utilruntime.HandleCrash (ReallyCrash is a
// process-wide switch berth leaves alone), and logs through klog.
//
// http.ErrAbortHandler is re-panicked, as upstream does: it is how a handler
// (a timed-out or aborted watch) asks net/http to cut the response quietly.
// A panic after the response has started is answered the same way, since
// a Status appended to half a body would read as garbage or as success.
func withPanicRecovery(h http.Handler, s runtime.NegotiatedSerializer, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		tracked := &startTracker{ResponseWriter: w}
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if r == http.ErrAbortHandler {
				panic(r)
			}
			log.Error("API handler panicked", "method", req.Method, "uri", req.RequestURI,
				"auditID", audit.GetAuditIDTruncated(req.Context()), "panic", r, "stack", string(debug.Stack()))
			if tracked.started.Load() {
				panic(http.ErrAbortHandler)
			}
			//lint:ignore ST1005 kube-apiserver's words, which clients and people may match
			responsewriters.ErrorNegotiated(apierrors.NewInternalError(errors.New(panicAnswer)), s, schema.GroupVersion{}, w, req)
		}()
		h.ServeHTTP(responsewriter.WrapForHTTP1Or2(tracked), req)
	})
}

// startTracker records whether any of the response has been sent.
type startTracker struct {
	http.ResponseWriter
	started atomic.Bool
}

func (t *startTracker) Unwrap() http.ResponseWriter { return t.ResponseWriter }

func (t *startTracker) WriteHeader(code int) {
	t.started.Store(true)
	t.ResponseWriter.WriteHeader(code)
}

func (t *startTracker) Write(b []byte) (int, error) {
	t.started.Store(true)
	return t.ResponseWriter.Write(b)
}

func (t *startTracker) Flush() {
	t.started.Store(true)
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (t *startTracker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	t.started.Store(true)
	h, ok := t.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be hijacked")
	}
	return h.Hijack()
}
