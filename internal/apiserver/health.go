package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	apimachineryversion "k8s.io/apimachinery/pkg/version"

	"github.com/berth/berth/internal/store"
	"github.com/berth/berth/internal/version"
)

// kubernetesVersion is the API release berth speaks; /version reports it as
// GitVersion (with berth's own version as build metadata) so that kubectl
// sees no version skew.
const kubernetesVersion = "v1.37.2"

func versionInfo() apimachineryversion.Info {
	v := version.Get()
	k8s := v.KubernetesAPI
	if !strings.HasPrefix(k8s, "v1.") {
		k8s = kubernetesVersion // not built from a module-aware checkout
	}
	major, minor := "1", strings.SplitN(strings.TrimPrefix(k8s, "v1."), ".", 2)[0]
	return apimachineryversion.Info{
		Major: major, Minor: minor,
		GitVersion:   k8s + "+berth-" + strings.TrimPrefix(v.Version, "v"),
		GitCommit:    v.GitCommit,
		GitTreeState: "clean",
		GoVersion:    v.GoVersion,
		Compiler:     "gc",
		Platform:     "linux/amd64",
	}
}

func versionHandler() http.Handler {
	body, _ := json.Marshal(versionInfo())
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// healthCheckTimeout bounds one store probe.
const healthCheckTimeout = 5 * time.Second

// healthHandler answers /healthz, /livez and /readyz: ok when the store
// answers a quorum read.
func healthHandler(s store.Interface) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), healthCheckTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if _, err := s.CurrentRevision(ctx); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "[-]etcd failed: %v\nhealthz check failed\n", err)
			return
		}
		if req.URL.Query().Has("verbose") {
			fmt.Fprint(w, "[+]ping ok\n[+]etcd ok\nhealthz check passed\n")
			return
		}
		fmt.Fprint(w, "ok")
	})
}
