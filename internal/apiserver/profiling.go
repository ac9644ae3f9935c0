package apiserver

import (
	"net/http"
	"net/http/pprof"
)

// profilingPath is where Go's pprof endpoints are served when
// Config.EnableProfiling is set.
const profilingPath = "/debug/pprof"

// addProfiling serves /debug/pprof/ as kube-apiserver's --profiling does
// (index and named profiles, CPU profile, symbol, trace). It sits behind the
// same authentication and authorization filters as every other path, so
// only users granted the non-resource URL (system:masters by default) get
// profiles. Upstream's routes.Profiling does the same five registrations
// but its package would pull go-restful and the OpenAPI builders into the
// module graph, hence these lines.
func addProfiling(m *http.ServeMux) {
	m.Handle(profilingPath, http.RedirectHandler(profilingPath+"/", http.StatusFound))
	m.HandleFunc(profilingPath+"/", pprof.Index)
	m.HandleFunc(profilingPath+"/profile", pprof.Profile)
	m.HandleFunc(profilingPath+"/symbol", pprof.Symbol)
	m.HandleFunc(profilingPath+"/trace", pprof.Trace)
}
