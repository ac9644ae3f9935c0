package server

import "fmt"

// pauseMode is how a sandbox's pause process runs, if it has one.
type pauseMode string

const (
	// pauseNone: no pause process; the pod's containers share no PID
	// namespace (see needsPause).
	pauseNone pauseMode = "none"
	// pauseProcess: a pause process the monitor started in the sandbox's
	// pinned namespaces (see package pause).
	pauseProcess pauseMode = "process"
	// pauseContainer: the pause image run as a container with runc, as
	// older berth versions did; it holds the sandbox's UTS and IPC
	// namespaces and has set its sysctls.
	pauseContainer pauseMode = "container"
)

func (m pauseMode) valid() bool {
	return m == pauseNone || m == pauseProcess || m == pauseContainer
}

// legacyPause is the pause mode of a sandbox record written before the
// mode was one field: two booleans, "noPause" and "pauseProcess", said it,
// and a record with neither (from before either existed) ran a pause
// container.
type legacyPause struct {
	NoPause      bool `json:"noPause"`
	PauseProcess bool `json:"pauseProcess"`
}

// mode reads the booleans as the mode they stood for.
func (l legacyPause) mode() pauseMode {
	switch {
	case l.NoPause:
		return pauseNone
	case l.PauseProcess:
		return pauseProcess
	default:
		return pauseContainer
	}
}

// resolvePause sets s.Pause of a record just read: as recorded, or, for an
// older record without the field, from its legacy booleans.
func (s *sandbox) resolvePause(legacy legacyPause) error {
	if s.Pause == "" {
		s.Pause = legacy.mode()
	}
	if !s.Pause.valid() {
		return fmt.Errorf("sandbox %s: unknown pause mode %q", s.ID, s.Pause)
	}
	return nil
}
