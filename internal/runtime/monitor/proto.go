package monitor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// The control socket speaks one JSON request line per connection, answered
// by one JSON response line. An attach connection then carries frames both
// ways until the container's output ends.

// Operations a client may request.
const (
	OpState  = "state"
	OpWait   = "wait"
	OpReopen = "reopen"
	OpAttach = "attach"
	OpSignal = "signal" // signal the container's init (the pause process)
)

// Request is the first line a client sends.
type Request struct {
	Op string `json:"op"`
	// Attach only: which streams the client wants.
	Stdin  bool `json:"stdin,omitempty"`
	Stdout bool `json:"stdout,omitempty"`
	Stderr bool `json:"stderr,omitempty"`
	// Signal only: the signal number.
	Signal int `json:"signal,omitempty"`
}

// Response is the monitor's answer line.
type Response struct {
	Error     string      `json:"error,omitempty"`
	Status    string      `json:"status,omitempty"` // lifecycle state
	Pid       int         `json:"pid,omitempty"`
	StartedAt time.Time   `json:"startedAt,omitzero"`
	Exit      *ExitStatus `json:"exit,omitempty"`
	Terminal  bool        `json:"terminal,omitempty"`
}

// Frame kinds on an attach connection.
const (
	frameStdin      byte = 0 // client -> monitor
	frameStdout     byte = 1 // monitor -> client
	frameStderr     byte = 2 // monitor -> client
	frameResize     byte = 3 // client -> monitor: width, height as two big-endian uint16
	frameCloseStdin byte = 4 // client -> monitor: no more input
)

// maxFrame bounds a frame's payload so a bad peer cannot make us allocate
// without limit.
const maxFrame = 1 << 20

func writeFrame(w io.Writer, kind byte, p []byte) error {
	var hdr [5]byte
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	if _, err := w.Write(append(hdr[:], p...)); err != nil {
		return err
	}
	return nil
}

func readFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds the limit", n)
	}
	if int(n) > cap(buf) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, errors.Join(errors.New("short frame"), err)
	}
	return hdr[0], buf, nil
}
