package nodeserver

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"k8s.io/apimachinery/pkg/util/proxy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// exec serves /exec/NS/POD/CONTAINER?command=...&stdin=1&stdout=1&stderr=1&tty=1.
func (h *handlers) exec(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cmd := q["command"]
	if len(cmd) == 0 {
		http.Error(w, "query parameter command is required", http.StatusBadRequest)
		return
	}
	h.streamContainer(w, r, func(ctx context.Context, id string, io streams) (string, error) {
		resp, err := h.cfg.Runtime.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: cmd,
			Stdin: io.stdin, Stdout: io.stdout, Stderr: io.stderr, Tty: io.tty})
		return resp.GetUrl(), err
	})
}

// attach serves /attach/NS/POD/CONTAINER with the same stream parameters.
func (h *handlers) attach(w http.ResponseWriter, r *http.Request) {
	h.streamContainer(w, r, func(ctx context.Context, id string, io streams) (string, error) {
		resp, err := h.cfg.Runtime.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id,
			Stdin: io.stdin, Stdout: io.stdout, Stderr: io.stderr, Tty: io.tty})
		return resp.GetUrl(), err
	})
}

// portForward serves /portForward/NS/POD; the ports travel in the
// upgraded stream's headers, as the kubelet's.
func (h *handlers) portForward(w http.ResponseWriter, r *http.Request) {
	sb, err := h.containers.sandbox(r.Context(), r.PathValue("ns"), r.PathValue("pod"))
	if err != nil {
		writeLookupError(w, err)
		return
	}
	resp, err := h.cfg.Runtime.PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sb.GetId()})
	h.proxyStream(w, r, resp.GetUrl(), err, "PortForward")
}

// streams are the stream parameters of exec and attach.
type streams struct{ stdin, stdout, stderr, tty bool }

func (h *handlers) streamContainer(w http.ResponseWriter, r *http.Request, start func(context.Context, string, streams) (string, error)) {
	io, err := parseStreams(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c, err := h.containers.container(r.Context(), r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container"), false)
	if err != nil {
		writeLookupError(w, err)
		return
	}
	if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		http.Error(w, fmt.Sprintf("container %q is not running", r.PathValue("container")), http.StatusBadRequest)
		return
	}
	u, err := start(r.Context(), c.GetId(), io)
	h.proxyStream(w, r, u, err, "streaming")
}

// proxyStream hands the upgraded connection to the runtime's streaming
// server at rawURL, as the kubelet does: the client never learns the
// single-use URL.
func (h *handlers) proxyStream(w http.ResponseWriter, r *http.Request, rawURL string, err error, call string) {
	if err != nil {
		http.Error(w, fmt.Sprintf("CRI %s: %v", call, err), http.StatusInternalServerError)
		return
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		http.Error(w, fmt.Sprintf("CRI %s returned URL %q: %v", call, rawURL, err), http.StatusInternalServerError)
		return
	}
	handler := proxy.NewUpgradeAwareHandler(u, nil, false, true, errorResponder{h})
	handler.ServeHTTP(w, r)
}

type errorResponder struct{ h *handlers }

func (e errorResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	e.h.cfg.Logger.Warn("stream proxy", "err", err)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// parseStreams reads the stream flags; "1" and "true" both mean on, since
// the API server and kubectl spell them differently.
func parseStreams(q url.Values) (streams, error) {
	var s streams
	for _, p := range []struct {
		names []string
		out   *bool
	}{
		{[]string{"stdin", "input"}, &s.stdin},
		{[]string{"stdout", "output"}, &s.stdout},
		{[]string{"stderr", "error"}, &s.stderr},
		{[]string{"tty"}, &s.tty},
	} {
		for _, name := range p.names {
			v := q.Get(name)
			if v == "" {
				continue
			}
			b, err := strconv.ParseBool(v)
			if err != nil {
				return s, fmt.Errorf("query parameter %s=%q: want true or false", name, v)
			}
			*p.out = *p.out || b
		}
	}
	if !s.stdin && !s.stdout && !s.stderr {
		return s, fmt.Errorf("at least one of stdin, stdout and stderr is required")
	}
	if s.tty && s.stderr {
		s.stderr = false // a terminal has one output stream, as upstream
	}
	return s, nil
}
