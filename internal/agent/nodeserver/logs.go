package nodeserver

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth/berth/internal/agent/crilog"
)

// handlers serves the node server's routes.
type handlers struct {
	cfg        Config
	containers containerFinder
}

// containerLogs serves /containerLogs/NS/POD/CONTAINER with the kubelet's
// query parameters: follow, previous, tailLines, sinceSeconds, sinceTime,
// timestamps, limitBytes.
func (h *handlers) containerLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	opts, previous, err := parseLogQuery(q)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	ns, pod, name := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	c, err := h.containers.container(ctx, ns, pod, name, previous)
	if err != nil {
		writeLookupError(w, err)
		return
	}
	status, err := h.cfg.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetId()})
	if err != nil {
		http.Error(w, fmt.Sprintf("CRI ContainerStatus: %v", err), http.StatusInternalServerError)
		return
	}
	path := status.GetStatus().GetLogPath()
	if path == "" {
		http.Error(w, fmt.Sprintf("container %q in pod %s/%s has no log file", name, ns, pod), http.StatusNotFound)
		return
	}
	opts.PollInterval = h.cfg.LogPollInterval
	opts.Running = func() bool {
		s, err := h.cfg.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetId()})
		return err == nil && s.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	out := &flushWriter{w: w}
	if f, ok := w.(http.Flusher); ok {
		out.f = f
	}
	if err := crilog.ReadLog(ctx, path, out, opts); err != nil {
		h.cfg.Logger.Warn("container log", "pod", ns+"/"+pod, "container", name, "err", err)
		if !out.wrote {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}
}

func parseLogQuery(q url.Values) (opts crilog.LogOptions, previous bool, err error) {
	boolParam := func(name string) (bool, error) {
		v := q.Get(name)
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("query parameter %s=%q: want true or false", name, v)
		}
		return b, nil
	}
	intParam := func(name string) (*int64, error) {
		v := q.Get(name)
		if v == "" {
			return nil, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("query parameter %s=%q: want a non-negative integer", name, v)
		}
		return &n, nil
	}
	if opts.Follow, err = boolParam("follow"); err != nil {
		return
	}
	if previous, err = boolParam("previous"); err != nil {
		return
	}
	if opts.Timestamps, err = boolParam("timestamps"); err != nil {
		return
	}
	if opts.TailLines, err = intParam("tailLines"); err != nil {
		return
	}
	if opts.LimitBytes, err = intParam("limitBytes"); err != nil {
		return
	}
	since, err := intParam("sinceSeconds")
	if err != nil {
		return
	}
	if since != nil {
		opts.Since = time.Now().Add(-time.Duration(*since) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		if since != nil {
			return opts, false, fmt.Errorf("query parameters sinceSeconds and sinceTime: give at most one")
		}
		if opts.Since, err = time.Parse(time.RFC3339, v); err != nil {
			return opts, false, fmt.Errorf("query parameter sinceTime=%q: want RFC 3339", v)
		}
	}
	return opts, previous, nil
}

// flushWriter pushes every write to the client: followed logs arrive as
// they are written.
type flushWriter struct {
	w     http.ResponseWriter
	f     http.Flusher
	wrote bool
}

func (fw *flushWriter) Write(p []byte) (int, error) {
	fw.wrote = true
	n, err := fw.w.Write(p)
	if fw.f != nil {
		fw.f.Flush()
	}
	return n, err
}
