package apiserver

import (
	"net/http"
	"strings"
	"sync"
)

// controllerDebugPath is where the control loops' debug pages are served,
// the path kube-controller-manager serves them under on its own port.
const controllerDebugPath = "/debug/controllers/"

// ControllerDebug serves the debug pages of the server's control loops
// (the garbage collector's dependency graph) at /debug/controllers/NAME/,
// behind the same authentication and authorization as every other path.
// A loop sets its page while it runs, so on a replica that does not lead
// the loop, or before it starts, the page answers 503.
type ControllerDebug struct {
	mu    sync.RWMutex
	pages map[string]*debugPage
}

// debugPage is one Set's handler; unset compares pages, not handlers,
// which may be of uncomparable types (http.HandlerFunc).
type debugPage struct{ http.Handler }

// NewControllerDebug returns a set with no pages, for Config.ControllerDebug.
func NewControllerDebug() *ControllerDebug {
	return &ControllerDebug{pages: map[string]*debugPage{}}
}

// Set serves h at /debug/controllers/NAME/ (with that prefix stripped, as
// kube-controller-manager strips it) until the returned unset is called.
func (d *ControllerDebug) Set(name string, h http.Handler) (unset func()) {
	page := &debugPage{h}
	d.mu.Lock()
	d.pages[name] = page
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		if d.pages[name] == page {
			delete(d.pages, name)
		}
		d.mu.Unlock()
	}
}

func (d *ControllerDebug) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, controllerDebugPath)
	name, _, _ := strings.Cut(rest, "/")
	d.mu.RLock()
	page := d.pages[name]
	d.mu.RUnlock()
	if page == nil {
		http.Error(w, "controller "+name+" does not run on this server now", http.StatusServiceUnavailable)
		return
	}
	http.StripPrefix(controllerDebugPath+name, page).ServeHTTP(w, r)
}
