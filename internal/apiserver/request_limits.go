package apiserver

import (
	"net/http"
	"time"

	genericfilters "k8s.io/apiserver/pkg/server/filters"
	apimux "k8s.io/apiserver/pkg/server/mux"
	apistorage "k8s.io/apiserver/pkg/storage"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	flowcontrolrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// requestWaitLimit is how long a request without a deadline may wait in its
// priority level's queue: kube-apiserver's request timeout (one minute)
// over four.
const requestWaitLimit = 15 * time.Second

// withRequestLimits bounds the requests served at once as kube-apiserver
// does: by API priority and fairness when cfg.FlowControl is set (it sits
// where kube-apiserver's does, after impersonation and before
// authorization, so it sees the user a request acts as), else by the
// max-in-flight limits.
func withRequestLimits(handler http.Handler, cfg *Config, objectStats func(string) (apistorage.Stats, error)) http.Handler {
	if cfg.FlowControl == nil {
		return genericfilters.WithMaxInFlightLimit(handler, cfg.MaxRequestsInFlight, cfg.MaxMutatingRequestsInFlight, longRunning)
	}
	estimate := flowcontrolrequest.NewWorkEstimator(objectStats, cfg.FlowControl.GetInterestedWatchCount,
		flowcontrolrequest.DefaultWorkEstimatorConfig(), cfg.FlowControl.GetMaxSeats)
	return genericfilters.WithPriorityAndFairness(handler, longRunning, cfg.FlowControl, estimate, requestWaitLimit)
}

// addFlowControlDebug serves API priority and fairness's state under
// /debug/api_priority_and_fairness/ (its priority levels, queues and
// requests, as CSV), to users the authorizer allows, as kube-apiserver does.
func addFlowControlDebug(m *http.ServeMux, fc utilflowcontrol.Interface) {
	debug := apimux.NewPathRecorderMux("api-priority-and-fairness")
	fc.Install(debug)
	m.Handle("/debug/api_priority_and_fairness/", debug)
}

// objectCounter is a collection reader that knows how many objects it
// holds (the watch cache, also their average size; the store reader of an
// uncached resource, counted each minute).
type objectCounter interface {
	ObjectStats() (apistorage.Stats, error)
}

// objectStats answers the work estimator's question for a group-resource
// ("pods", "deployments.apps", "widgets.example.com"): berth's own
// resources from their readers, custom resources and APIServices from
// their last count. Resources of aggregated servers are unknown, which the
// estimator prices at its minimum, as kube-apiserver does.
func (a *apiSet) objectStats(groupResource string) (apistorage.Stats, error) {
	if stats, ok := a.objectCounts[groupResource]; ok {
		return stats()
	}
	if a.extensionCounts != nil {
		return a.extensionCounts.Get(groupResource)
	}
	return apistorage.Stats{}, flowcontrolrequest.ObjectCountNotFoundErr
}
