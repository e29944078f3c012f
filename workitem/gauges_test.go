package workitem_test

import (
	"slices"
	"strings"
	"testing"
	"time"

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

// Work items are counted by status (pending, claimed, and each ended
// one by its outcome: succeeded, failed, cancelled, a bounded label set)
// and the claimable ones apart, as they move; no reservation is counted.
// A snapshot restored in a fresh FSM counts the same.
func TestWorkItemGauges(t *testing.T) {
	l, s := newService(t)
	want := func(g map[string]float64, pending, claimed, succeeded, failed, cancelled, claimable float64) {
		t.Helper()
		for series, v := range map[string]float64{
			"workitem workitems/pending": pending, "workitem workitems/claimed": claimed,
			"workitem workitems/succeeded": succeeded, "workitem workitems/failed": failed, "workitem workitems/cancelled": cancelled,
			"workitem workitems_claimable/": claimable, "workitem host_reservations/held": 0, "workitem host_reservations/lapsed": 0,
		} {
			if got, ok := g[series]; !ok || got != v {
				t.Fatalf("%s = %v (present %v), want %v; all: %v", series, got, ok, v, g)
			}
		}
		for series := range g {
			if strings.HasPrefix(series, "workitem workitems/") && !slices.Contains(
				[]string{"pending", "claimed", "succeeded", "failed", "cancelled"}, strings.TrimPrefix(series, "workitem workitems/")) {
				t.Fatalf("a status outside the bounded set: %s (all: %v)", series, g)
			}
		}
	}
	want(gaugeValues(l), 0, 0, 0, 0, 0, 0)
	a := mustSubmit(t, s, req("a"))
	mustSubmit(t, s, req("b", a.WorkItemID))
	c := req("c")
	c.MaxAttempts = 1 // a failed completion ends it
	failing := mustSubmit(t, s, c)
	d := mustSubmit(t, s, req("d"))
	want(gaugeValues(l), 4, 0, 0, 0, 0, 3) // b waits for a
	cl := mustClaim(t, s, workitem.ClaimRequest{TenantRef: "t", OwnerRef: "o", TTLMs: 10_000, WorkItemID: a.WorkItemID})
	want(gaugeValues(l), 3, 1, 0, 0, 0, 2)
	if _, err := s.Complete(bg, workitem.CompleteRequest{TenantRef: "t", WorkItemID: a.WorkItemID,
		Attempt: cl.Attempt, Fence: cl.Fence, Outcome: workitem.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	want(gaugeValues(l), 3, 0, 1, 0, 0, 3) // b is claimable now
	if _, err := s.Cancel(bg, workitem.CancelRequest{TenantRef: "t", WorkItemID: d.WorkItemID, Reason: "not needed"}); err != nil {
		t.Fatal(err)
	}
	want(gaugeValues(l), 2, 0, 1, 0, 1, 2)
	cl = mustClaim(t, s, workitem.ClaimRequest{TenantRef: "t", OwnerRef: "o", TTLMs: 10_000, WorkItemID: failing.WorkItemID})
	if _, err := s.Complete(bg, workitem.CompleteRequest{TenantRef: "t", WorkItemID: cl.WorkItem.WorkItemID,
		Attempt: cl.Attempt, Fence: cl.Fence, Outcome: workitem.StatusFailed}); err != nil {
		t.Fatal(err)
	}
	want(gaugeValues(l), 1, 0, 1, 1, 1, 1)

	restored := fsmtest.RestoreFresh(t, fsmtest.Snapshot(t, l.FSM), workitem.Module())
	g := map[string]float64{}
	for _, x := range restored.Gauges() {
		g[x.Domain+" "+x.Name+"/"+x.Status] = x.Value
	}
	want(g, 1, 0, 1, 1, 1, 1)

	// Retention forgets the ended items, and their counts with them.
	l.Advance(workitem.TerminalRetention + time.Second)
	tick(t, l, 8)
	want(gaugeValues(l), 1, 0, 0, 0, 0, 1)
}
