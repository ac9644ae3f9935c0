package monitor

import (
	"fmt"
	"sync"
)

// phase is the container's lifecycle as the monitor drives it.
type phase string

const (
	phaseCreating phase = "creating"
	phaseCreated  phase = "created"
	phaseRunning  phase = "running"
	phaseStopped  phase = "stopped"
)

// transitions lists the only moves the lifecycle allows; stopped is final.
var transitions = map[phase][]phase{
	phaseCreating: {phaseCreated, phaseStopped},
	phaseCreated:  {phaseRunning, phaseStopped},
	phaseRunning:  {phaseStopped},
}

// lifecycle is the state machine; invalid moves are errors, never applied.
type lifecycle struct {
	mu sync.Mutex
	at phase
}

func (l *lifecycle) get() phase {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at
}

// to moves to next if allowed from the current phase.
func (l *lifecycle) to(next phase) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range transitions[l.at] {
		if p == next {
			l.at = next
			return nil
		}
	}
	return fmt.Errorf("container is %s, cannot become %s", l.at, next)
}
