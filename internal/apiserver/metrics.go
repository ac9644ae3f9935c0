package apiserver

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// requestMetrics counts API requests by verb, resource and response code.
type requestMetrics struct {
	requests *prometheus.CounterVec
}

func newRequestMetrics(reg prometheus.Registerer) (*requestMetrics, error) {
	m := &requestMetrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "berth_apiserver_requests_total",
		Help: "API requests by verb, group, resource, subresource and HTTP code (watches count when they end).",
	}, []string{"verb", "group", "resource", "subresource", "code"})}
	if err := reg.Register(m.requests); err != nil {
		return nil, fmt.Errorf("registering request metrics: %w", err)
	}
	return m, nil
}

// instrument counts every request that reaches next.
func (m *requestMetrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, req)
		verb, group, resource, subresource := req.Method, "", "", ""
		if info, ok := request.RequestInfoFrom(req.Context()); ok && info.IsResourceRequest {
			verb, group, resource, subresource = info.Verb, info.APIGroup, info.Resource, info.Subresource
		}
		m.requests.WithLabelValues(verb, group, resource, subresource, strconv.Itoa(rec.code)).Inc()
	})
}

// statusRecorder remembers the response code; it passes Flush through so
// that watch streams keep flushing.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// CloseNotify passes the connection's close notice through: upstream's
// go-restful handlers (CRDs) keep a writer's Flush only when it also has
// CloseNotify (responsewriter.WrapForHTTP1Or2).
func (r *statusRecorder) CloseNotify() <-chan bool {
	//lint:ignore SA1019 upstream's writer wrappers still require it
	if n, ok := r.ResponseWriter.(http.CloseNotifier); ok {
		return n.CloseNotify()
	}
	return make(chan bool)
}

// Hijack passes the connection on for upgraded requests (pods/exec,
// attach, portforward); they count as 101.
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("response writer %T cannot be hijacked", r.ResponseWriter)
	}
	r.code = http.StatusSwitchingProtocols
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
