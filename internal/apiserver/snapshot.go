package apiserver

import (
	"io"
	"log/slog"
	"net/http"

	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/berth/berth/internal/store"
)

// SnapshotPath serves a consistent backup of the whole store (an etcd
// snapshot) to whoever may `get` this non-resource URL: by default only
// system:masters. It is how `berth snapshot save` backs up an embedded etcd,
// which has no listener for etcdctl to reach.
const SnapshotPath = "/berth/v1/snapshot"

func snapshotHandler(snap store.Snapshotter, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "only GET", http.StatusMethodNotAllowed)
			return
		}
		rc, err := snap.Snapshot(req.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer rc.Close()
		user := "unknown"
		if u, ok := request.UserFrom(req.Context()); ok {
			user = u.GetName()
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		n, err := io.Copy(w, rc)
		if err != nil {
			// Headers are gone; the client sees a short body and its
			// integrity check (etcd's snapshot hash) fails.
			log.Warn("store snapshot cut short", "user", user, "bytes", n, "err", err)
			return
		}
		log.Info("store snapshot served", "user", user, "bytes", n)
	})
}
