package monitor

import (
	"net"
	"sync"
	"time"
)

// attachWriteTimeout cuts off an attached client that stops reading, so it
// cannot stall the container's output (the log is written first regardless).
const attachWriteTimeout = 10 * time.Second

type attachClient struct {
	conn           net.Conn
	stdout, stderr bool
}

// hub fans the container's output out to attached clients.
type hub struct {
	mu      sync.Mutex
	clients map[*attachClient]struct{}
	closed  bool
}

func newHub() *hub { return &hub{clients: map[*attachClient]struct{}{}} }

func (h *hub) remove(c *attachClient) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, c)
}

func (h *hub) publish(kind byte, p []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		if (kind == frameStdout && !c.stdout) || (kind == frameStderr && !c.stderr) {
			continue
		}
		_ = c.conn.SetWriteDeadline(time.Now().Add(attachWriteTimeout))
		if err := writeFrame(c.conn, kind, p); err != nil {
			c.conn.Close()
			delete(h.clients, c)
		}
	}
}

// closeAll ends every attach session: the output is over.
func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for c := range h.clients {
		c.conn.Close()
		delete(h.clients, c)
	}
}
