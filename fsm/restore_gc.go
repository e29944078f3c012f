package fsm

import (
	"io"
	"math"
	"runtime/debug"
	"sync"
)

// A restore builds a state that stays live to its end: every collection
// during one finds nearly nothing to free, and the state of a 5M-record
// node is ~4 GB that each cycle marks again. So while a memory limit is
// in force (GOMEMLIMIT, debug.SetMemoryLimit), a restore turns the
// GOGC-based collector off, and the limit alone decides when to collect:
// no more memory than the limit allows, with fewer cycles below it.
// Without a limit the collector is left alone: off, nothing would bound
// the restore's garbage. Turning it off waits for a collection under way
// to end (debug.SetGCPercent): at a node's start there is none worth the
// name; a running node installing a snapshot may wait out the current
// cycle, whose marking would have competed with the restore anyway.
//
// The setting is the process's, and FSMs of one process (tests, a host
// that embeds several) may restore at once: the first restore to begin
// saves it, the last to end puts it back.
var restoreGC struct {
	mu      sync.Mutex
	active  int // restores under way that turned the collector off
	percent int // the GC percent to put back
}

// relaxGCForRestore turns the GOGC-based collector off if a memory limit
// is set; the returned func undoes it and must be called once.
func relaxGCForRestore() (undo func()) {
	restoreGC.mu.Lock()
	defer restoreGC.mu.Unlock()
	if restoreGC.active == 0 {
		if debug.SetMemoryLimit(-1) == math.MaxInt64 {
			return func() {} // no limit: nothing would bound the heap
		}
		restoreGC.percent = debug.SetGCPercent(-1)
	}
	restoreGC.active++
	return func() {
		restoreGC.mu.Lock()
		defer restoreGC.mu.Unlock()
		if restoreGC.active--; restoreGC.active == 0 {
			debug.SetGCPercent(restoreGC.percent)
		}
	}
}

// readStateRelaxed is readState with the collector relaxed meanwhile.
func (f *FSM) readStateRelaxed(r io.Reader) (*loadedState, error) {
	defer relaxGCForRestore()()
	return f.readState(r) // which reads in chunks of its own
}
