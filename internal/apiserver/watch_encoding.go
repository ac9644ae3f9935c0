package apiserver

import "net/http"

// withoutWatchCompression serves watch requests uncompressed whatever the
// client's Accept-Encoding. k8s.io/apiserver v0.37 gzips a watch-list stream
// (sendInitialEvents, which client-go's informers use by default) when the
// client accepts gzip, and it does so per flush: every event that reaches an
// idle watcher becomes a gzip member of its own, a fresh compressor for a
// few kilobytes that barely shrink. Profiles of bench/api put that at ~10%
// of berth server's CPU; a micro-benchmark of one 2.7 kB event measured
// 0.2-0.6 ms per flush on this machine. Plain watches were never
// compressed, upstream or here; LIST responses still are (above 128 kB).
func withoutWatchCompression(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Accept-Encoding") != "" {
			req = req.Clone(req.Context())
			req.Header.Del("Accept-Encoding")
		}
		next.ServeHTTP(w, req)
	})
}
