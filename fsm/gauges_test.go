package fsm_test

import (
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

// Gauges reads every module's, in module name order, with the FSM's
// clock; a module whose Gauges panics is left out and the panic counted,
// and the others are still read.
func TestGaugesOfModules(t *testing.T) {
	var sawNow int64
	counting := fsm.Module{Name: "b-counting", Gauges: func(rt *fsm.ReadTx) []fsm.Gauge {
		sawNow = rt.Now
		return []fsm.Gauge{{Name: "things", Help: "Things.", Status: "x", Value: 2}}
	}}
	broken := fsm.Module{Name: "a-broken", Gauges: func(*fsm.ReadTx) []fsm.Gauge { panic("a bug") }}
	l, err := fsmtest.New(counting, broken)
	if err != nil {
		t.Fatal(err)
	}
	got := l.FSM.Gauges()
	if len(got) != 1 || got[0] != (fsm.DomainGauge{Domain: "b-counting", Gauge: fsm.Gauge{Name: "things", Help: "Things.", Status: "x", Value: 2}}) {
		t.Fatalf("gauges %+v", got)
	}
	if l.FSM.Panics() != 1 {
		t.Fatalf("panics %d, want the broken module's 1", l.FSM.Panics())
	}
	if sawNow != l.FSM.Now() {
		t.Fatalf("the module read FSM time %d, the FSM is at %d", sawNow, l.FSM.Now())
	}
}
