package workitem_test

import (
	"fmt"
	"sort"
	"strings"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/workitem"
)

// The helpers below read the work-item tables straight out of the FSM's
// snapshot stream (the documented format of fsm/snapshot.go), so that
// tests check the stored state itself, not only what the reads show.
// The row types mirror the package's from their msgpack field names.
type (
	storedGraph struct {
		TenantRef    string `msgpack:"tenant_ref"`
		GraphRef     string `msgpack:"graph_ref"`
		LastSequence uint64 `msgpack:"last_sequence"`
	}
	storedTenant struct {
		TenantRef string `msgpack:"tenant_ref"`
		InFlight  int64  `msgpack:"in_flight"`
	}
	storedReady struct {
		TenantRef    string `msgpack:"tenant_ref"`
		GraphRef     string `msgpack:"graph_ref"`
		Kind         string `msgpack:"kind"`
		Rank         uint64 `msgpack:"rank"`
		Sequence     uint64 `msgpack:"sequence"`
		WorkItemID   string `msgpack:"work_item_id"`
		DeadlineAtMs int64  `msgpack:"deadline_at_ms"`
	}
	storedTime struct {
		AtMs       int64  `msgpack:"at_ms"`
		TenantRef  string `msgpack:"tenant_ref"`
		WorkItemID string `msgpack:"work_item_id"`
	}
	storedEdge struct {
		TenantRef      string `msgpack:"tenant_ref"`
		DependencyID   string `msgpack:"dependency_id"`
		DependentID    string `msgpack:"dependent_id"`
		DependentIndex uint64 `msgpack:"dependent_index"`
	}
	storedCascade struct {
		Index      uint64 `msgpack:"index"`
		TenantRef  string `msgpack:"tenant_ref"`
		WorkItemID string `msgpack:"work_item_id"`
		Status     string `msgpack:"status"`
	}
)

// storedState is every work-item table of an FSM, plus the raw rows of
// every table for digests, and the FSM's applied index and time.
type storedState struct {
	fsmtest.Stored
	Items                  []workitem.WorkItem
	Graphs                 []storedGraph
	Tenants                []storedTenant
	Ready                  []storedReady
	Claims, Deadlines, End []storedTime
	Edges                  []storedEdge
	Cascade                []storedCascade
}

type fataler = fsmtest.Fataler

// readStored parses f's snapshot stream.
func readStored(t fataler, f *fsm.FSM) storedState {
	t.Helper()
	s := fsmtest.ReadStored(t, f)
	return storedState{Stored: s,
		Items:     fsmtest.Rows[workitem.WorkItem](t, s, "workitem_items"),
		Graphs:    fsmtest.Rows[storedGraph](t, s, "workitem_graphs"),
		Tenants:   fsmtest.Rows[storedTenant](t, s, "workitem_tenants"),
		Ready:     fsmtest.Rows[storedReady](t, s, "workitem_ready"),
		Claims:    fsmtest.Rows[storedTime](t, s, "workitem_claims"),
		Deadlines: fsmtest.Rows[storedTime](t, s, "workitem_deadlines"),
		End:       fsmtest.Rows[storedTime](t, s, "workitem_ended"),
		Edges:     fsmtest.Rows[storedEdge](t, s, "workitem_edges"),
		Cascade:   fsmtest.Rows[storedCascade](t, s, "workitem_cascade"),
	}
}

// workDigest covers the work-item tables only.
func (s storedState) workDigest() [32]byte {
	return s.Digest(func(table string) bool { return strings.HasPrefix(table, "workitem_") })
}

func inFlightStatus(status string) bool {
	return status == workitem.StatusPending || status == workitem.StatusClaimed
}

// invariants lists every way s breaks the rules of the work-item tables.
func (s storedState) invariants() []string {
	var bad []string
	badf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	type key struct{ tenant, id string }
	items := map[key]workitem.WorkItem{}
	flying := map[string]int64{}
	top := map[[2]string]uint64{}
	for _, it := range s.Items {
		k := key{it.TenantRef, it.WorkItemID}
		items[k] = it
		if inFlightStatus(it.Status) {
			flying[it.TenantRef]++
		}
		g := [2]string{it.TenantRef, it.GraphRef}
		top[g] = max(top[g], it.CommandSequence)
		if it.CommandSequence == 0 || it.AdmittedIndex == 0 || it.AdmittedIndex > s.Index || it.OutboxID == 0 {
			badf("item %s/%s: sequence %d, admitted at %d (applied %d), outbox %d", it.TenantRef, it.WorkItemID, it.CommandSequence, it.AdmittedIndex, s.Index, it.OutboxID)
		}
		if it.Dependencies.Total != int64(len(it.DependsOn)) || it.Dependencies.Satisfied < 0 || it.Dependencies.Satisfied > it.Dependencies.Total {
			badf("item %s/%s: dependencies %+v of %d", it.TenantRef, it.WorkItemID, it.Dependencies, len(it.DependsOn))
		}
		if it.Attempt < 0 || it.Attempt > it.MaxAttempts || (it.Attempt == 0) != (it.Fence == 0) || it.Fence > s.Index {
			badf("item %s/%s: attempt %d of %d, fence %d (applied %d)", it.TenantRef, it.WorkItemID, it.Attempt, it.MaxAttempts, it.Fence, s.Index)
		}
		switch it.Status {
		case workitem.StatusClaimed:
			if it.Attempt < 1 || it.ClaimExpiresAtMs == 0 || it.OwnerRef == "" {
				badf("claimed item %s/%s: %+v", it.TenantRef, it.WorkItemID, it)
			}
		case workitem.StatusPending:
			if it.OwnerRef != "" || it.ClaimExpiresAtMs != 0 || it.EndedAtMs != 0 {
				badf("pending item %s/%s keeps claim or end fields", it.TenantRef, it.WorkItemID)
			}
		case workitem.StatusSucceeded, workitem.StatusFailed, workitem.StatusCancelled:
			if it.EndedAtMs == 0 {
				badf("ended item %s/%s without an end time", it.TenantRef, it.WorkItemID)
			}
		default:
			badf("item %s/%s in status %q", it.TenantRef, it.WorkItemID, it.Status)
		}
	}
	counted := map[string]int64{}
	for _, r := range s.Tenants {
		counted[r.TenantRef] = r.InFlight
	}
	for tenant, n := range flying {
		if counted[tenant] != n {
			badf("tenant %s counts %d in flight; it has %d", tenant, counted[tenant], n)
		}
	}
	for tenant, n := range counted {
		if flying[tenant] != n {
			badf("tenant %s counts %d in flight; it has %d", tenant, n, flying[tenant])
		}
	}
	for _, g := range s.Graphs {
		if top[[2]string{g.TenantRef, g.GraphRef}] > g.LastSequence {
			badf("graph %s/%s is at sequence %d below an item's %d", g.TenantRef, g.GraphRef, g.LastSequence, top[[2]string{g.TenantRef, g.GraphRef}])
		}
		delete(top, [2]string{g.TenantRef, g.GraphRef})
	}
	for g := range top {
		badf("graph %s/%s has items but no sequence row", g[0], g[1])
	}
	indexed := map[key]bool{}
	for _, r := range s.Ready {
		k := key{r.TenantRef, r.WorkItemID}
		indexed[k] = true
		it, ok := items[k]
		want := storedReady{TenantRef: it.TenantRef, GraphRef: it.GraphRef, Kind: it.Kind, Rank: uint64(workitem.MaxPriority - it.Priority),
			Sequence: it.CommandSequence, WorkItemID: it.WorkItemID}
		if it.DeadlineUnix != nil {
			want.DeadlineAtMs = *it.DeadlineUnix * 1000
		}
		if !ok || it.Status != workitem.StatusPending || it.Dependencies.Satisfied != it.Dependencies.Total || r != want {
			badf("ready row %+v for item %+v", r, it)
		}
	}
	waiting := map[key]int64{}
	for _, e := range s.Edges {
		dep, ok := items[key{e.TenantRef, e.DependencyID}]
		if !ok {
			badf("edge %+v from a missing dependency", e)
			continue
		}
		if !inFlightStatus(dep.Status) && !s.queued(e.TenantRef, e.DependencyID) {
			badf("edge %+v from %s dependency with no cascade queued", e, dep.Status)
		}
		if it, ok := items[key{e.TenantRef, e.DependentID}]; ok && it.AdmittedIndex == e.DependentIndex {
			waiting[key{e.TenantRef, e.DependentID}]++
		}
	}
	claims := timeIndex(s.Claims)
	deadlines := timeIndex(s.Deadlines)
	ended := timeIndex(s.End)
	for k, it := range items {
		if ready(it) != indexed[k] {
			badf("item %s/%s: ready %t, indexed %t", k.tenant, k.id, ready(it), indexed[k])
		}
		if it.Status == workitem.StatusPending && it.Dependencies.Total-it.Dependencies.Satisfied != waiting[k] {
			badf("pending item %s/%s waits for %d dependencies; %d edges lead to it", k.tenant, k.id, it.Dependencies.Total-it.Dependencies.Satisfied, waiting[k])
		}
		wantAt := func(name string, idx map[[2]string][]int64, in bool, at int64, optional bool) {
			got := idx[[2]string{k.tenant, k.id}]
			switch {
			case in && len(got) == 1 && got[0] == at, !in && len(got) == 0, in && optional && len(got) == 0:
			default:
				badf("item %s/%s (%s): %s rows %v, want one at %d: %t", k.tenant, k.id, it.Status, name, got, at, in)
			}
			delete(idx, [2]string{k.tenant, k.id})
		}
		var deadline int64
		if it.DeadlineUnix != nil {
			deadline = *it.DeadlineUnix * 1000
		}
		wantAt("claim", claims, it.Status == workitem.StatusClaimed, it.ClaimExpiresAtMs, false)
		wantAt("deadline", deadlines, inFlightStatus(it.Status) && deadline != 0, deadline,
			it.Status == workitem.StatusClaimed && deadline <= s.Now)
		wantAt("ended", ended, !inFlightStatus(it.Status), it.EndedAtMs, false)
	}
	for _, idx := range []map[[2]string][]int64{claims, deadlines, ended} {
		for k := range idx {
			badf("time index row for missing item %s/%s", k[0], k[1])
		}
	}
	for _, c := range s.Cascade {
		it, ok := items[key{c.TenantRef, c.WorkItemID}]
		if !ok || it.Status != c.Status || inFlightStatus(it.Status) {
			badf("cascade row %+v for item %+v", c, it)
		}
	}
	sort.Strings(bad)
	return bad
}

func (s storedState) queued(tenant, id string) bool {
	for _, c := range s.Cascade {
		if c.TenantRef == tenant && c.WorkItemID == id {
			return true
		}
	}
	return false
}

func ready(it workitem.WorkItem) bool {
	return it.Status == workitem.StatusPending && it.Dependencies.Satisfied == it.Dependencies.Total
}

func timeIndex(rows []storedTime) map[[2]string][]int64 {
	out := map[[2]string][]int64{}
	for _, r := range rows {
		k := [2]string{r.TenantRef, r.WorkItemID}
		out[k] = append(out[k], r.AtMs)
	}
	return out
}

// checkStored fails t if f's work-item tables break an invariant, and
// returns them.
func checkStored(t fataler, f *fsm.FSM) storedState {
	t.Helper()
	st := readStored(t, f)
	if bad := st.invariants(); len(bad) > 0 {
		t.Fatalf("work-item tables break %d invariants:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	return st
}
