package linearizability

import (
	"sort"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkBoth runs porcupine with model on ops and on the same history as
// events, so both of the model's partition functions are exercised, and
// requires the two answers to agree.
func checkBoth(t *testing.T, model porcupine.Model, ops []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	res := porcupine.CheckOperationsTimeout(model, ops, 5*time.Second)
	if ev := porcupine.CheckEventsTimeout(model, toEvents(ops), 5*time.Second); ev != res {
		t.Fatalf("operations check says %s, events check says %s", res, ev)
	}
	return res
}

// toEvents turns operations into a time-ordered event history, calls
// before returns at equal times (as porcupine orders operations).
func toEvents(ops []porcupine.Operation) []porcupine.Event {
	type stamped struct {
		t  int64
		ev porcupine.Event
	}
	var all []stamped
	for i, o := range ops {
		all = append(all,
			stamped{o.Call, porcupine.Event{ClientId: o.ClientId, Kind: porcupine.CallEvent, Value: o.Input, Id: i}},
			stamped{o.Return, porcupine.Event{ClientId: o.ClientId, Kind: porcupine.ReturnEvent, Value: o.Output, Id: i}})
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		return a.t < b.t || a.t == b.t && a.ev.Kind == porcupine.CallEvent && b.ev.Kind == porcupine.ReturnEvent
	})
	out := make([]porcupine.Event, len(all))
	for i, s := range all {
		out[i] = s.ev
	}
	return out
}
