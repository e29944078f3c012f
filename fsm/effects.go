package fsm

import (
	"fmt"
	"runtime/debug"
	"time"
)

// EffectFailure is the last effect that failed on this replica (see
// Effect): what it was, the error, the applied index it ran at and when.
// Effects fail closed, so a failure changes no state and no result; this
// is how an operator learns of one without reading logs.
type EffectFailure struct {
	Effect string    `json:"effect"`
	Error  string    `json:"error"`
	Index  uint64    `json:"index"`
	At     time.Time `json:"at"`
}

// runEffects runs committed commands' effects in order; index is the
// applied index they follow. A failure or a panic is logged, counted and
// kept as the last failure; it changes nothing else.
func (f *FSM) runEffects(effects []Effect, index uint64) {
	for _, e := range effects {
		f.effectRuns.Add(1)
		if err := runEffect(e); err != nil {
			f.effectFailed(e.Name, index, err)
		}
	}
}

func (f *FSM) effectFailed(name string, index uint64, err error) {
	f.effectFailures.Add(1)
	// Wall time is only reported, never part of the state.
	f.lastEffectFailure.Store(&EffectFailure{Effect: name, Error: err.Error(), Index: index, At: time.Now().UTC()})
	f.logger.Error("effect failed", "effect", name, "index", index, "error", err)
}

func runEffect(e Effect) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return e.Run()
}

// EffectRuns and EffectFailures count effects run and failed (metrics).
func (f *FSM) EffectRuns() uint64     { return f.effectRuns.Load() }
func (f *FSM) EffectFailures() uint64 { return f.effectFailures.Load() }

// LastEffectFailure is the last effect that failed here, nil if none has.
func (f *FSM) LastEffectFailure() *EffectFailure { return f.lastEffectFailure.Load() }
