package workitem_test

import (
	"testing"

	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/workitem"
)

// gaugeValues is the FSM's gauges as "domain name/status" -> value.
func gaugeValues(l *fsmtest.Local) map[string]float64 {
	out := map[string]float64{}
	for _, g := range l.FSM.Gauges() {
		out[g.Domain+" "+g.Name+"/"+g.Status] = g.Value
	}
	return out
}

// Work items are counted by status (pending, claimed, ended) and the
// claimable ones apart, as they move; no reservation is counted.
func TestWorkItemGauges(t *testing.T) {
	l, s := newService(t)
	want := func(pending, claimed, ended, claimable float64) {
		t.Helper()
		g := gaugeValues(l)
		for series, v := range map[string]float64{
			"workitem workitems/pending": pending, "workitem workitems/claimed": claimed, "workitem workitems/ended": ended,
			"workitem workitems_claimable/": claimable, "workitem host_reservations/held": 0, "workitem host_reservations/lapsed": 0,
		} {
			if got, ok := g[series]; !ok || got != v {
				t.Fatalf("%s = %v (present %v), want %v; all: %v", series, got, ok, v, g)
			}
		}
	}
	want(0, 0, 0, 0)
	a := mustSubmit(t, s, req("a"))
	mustSubmit(t, s, req("b", a.WorkItemID))
	mustSubmit(t, s, req("c"))
	want(3, 0, 0, 2) // b waits for a
	cl := mustClaim(t, s, claimReq("o"))
	want(2, 1, 0, 1)
	if _, err := s.Complete(bg, workitem.CompleteRequest{TenantRef: "t", WorkItemID: cl.WorkItem.WorkItemID,
		Attempt: cl.Attempt, Fence: cl.Fence, Outcome: workitem.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	g := gaugeValues(l)
	if g["workitem workitems/pending"] != 2 || g["workitem workitems/claimed"] != 0 || g["workitem workitems/ended"] != 1 {
		t.Fatalf("after a completion: %v", g)
	}
}
