package apiserver

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	apimetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	cachermetrics "k8s.io/apiserver/pkg/storage/cacher/metrics"
	etcd3metrics "k8s.io/apiserver/pkg/storage/etcd3/metrics"
	flowcontrolmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// instrument records every request that reaches next in kube-apiserver's
// request metrics (apiserver_request_total, apiserver_request_duration_seconds,
// apiserver_response_sizes, ...), as upstream's route instrumentation does,
// so dashboards and alerts written for kube-apiserver read berth's.
func instrument(next http.Handler) http.Handler {
	apimetrics.Register()
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		delegate := &apimetrics.ResponseWriterDelegator{ResponseWriter: w}
		next.ServeHTTP(responsewriter.WrapForHTTP1Or2(delegate), req)
		info, ok := request.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest {
			return
		}
		received, ok := request.ReceivedTimestampFrom(req.Context())
		if !ok {
			return
		}
		// A hijacked (upgraded) request has no status, code "0", as upstream's.
		apimetrics.MonitorRequest(req, metricsVerb(req, info), info.APIGroup, info.APIVersion, info.Resource, info.Subresource,
			apimetrics.CleanScope(info), "apiserver", false, "", delegate.Status(), delegate.ContentLength(), time.Since(received))
	})
}

// metricsVerb is the verb upstream's API installer names a route by for its
// metrics; MonitorRequest refines it (WATCH, APPLY, CONNECT).
func metricsVerb(req *http.Request, info *request.RequestInfo) string {
	switch info.Verb {
	case "get", "list", "watch", "deletecollection":
		return strings.ToUpper(info.Verb)
	}
	return strings.ToUpper(req.Method)
}

// metricsHandler serves berth's own series (reg) with those upstream's
// packages register in k8s.io/component-base's registry: the request,
// priority-and-fairness and admission webhook metrics kube-apiserver serves,
// upstream's watch cache's and storage's (the extension servers'
// resources: object counts, lists served from the cache), and the process
// and Go runtime collectors.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	flowcontrolmetrics.Register()
	cachermetrics.Register()
	etcd3metrics.Register()
	return promhttp.HandlerFor(prometheus.Gatherers{reg, legacyregistry.DefaultGatherer}, promhttp.HandlerOpts{})
}
