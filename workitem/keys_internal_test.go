package workitem

import (
	"math"
	"testing"

	"github.com/arbiterhq/arbiter/internal/statestore"
)

// TestTablesKeysAgree: every typed key of the module's tables gives each
// row the key go-memdb's field indexers give it (the indexers lookups
// use), on rows at the edges: empty strings (the row is then not in
// that index), zero bytes, zero and extreme numbers.
func TestTablesKeysAgree(t *testing.T) {
	const z = "a\x00b"
	times := []any{&timeRow{}, &timeRow{AtMs: math.MinInt64, TenantRef: "t", WorkItemID: "w"},
		&timeRow{AtMs: math.MaxInt64, TenantRef: z, WorkItemID: "w"}, &timeRow{AtMs: -1, TenantRef: "t"}}
	rows := map[string][]any{
		tableItems: {&WorkItem{}, &WorkItem{TenantRef: "t"}, &WorkItem{TenantRef: "t", WorkItemID: "w", GraphRef: "g", Status: StatusPending},
			&WorkItem{TenantRef: z, WorkItemID: z, GraphRef: z, Status: StatusSucceeded, CommandSequence: math.MaxUint64}},
		tableGraphs:   {&graphRow{}, &graphRow{TenantRef: "t", GraphRef: "g"}, &graphRow{TenantRef: z}},
		tableTenants:  {&tenantRow{}, &tenantRow{TenantRef: "t"}, &tenantRow{TenantRef: z}},
		tableReady:    {&readyRow{}, &readyRow{TenantRef: "t", GraphRef: "g", Kind: "k", WorkItemID: "w", Rank: math.MaxUint64, Sequence: 1}, &readyRow{TenantRef: "t", WorkItemID: z}},
		tableClaims:   times,
		tableDeadline: times,
		tableEnded:    times,
		tableEdges:    {&edgeRow{}, &edgeRow{TenantRef: "t", DependencyID: "a", DependentID: "b"}, &edgeRow{TenantRef: "t", DependencyID: z}},
		tableCascade:  {&cascadeRow{}, &cascadeRow{Index: math.MaxUint64, TenantRef: "t", WorkItemID: "w"}, &cascadeRow{TenantRef: z, WorkItemID: z}},
		tableHosts:    {&Host{}, &Host{HostID: "h"}, &Host{HostID: z}},
		tableProfiles: {&Profile{}, &Profile{Name: "p"}, &Profile{Name: "p", Version: "v1"}, &Profile{Name: z, Version: z}},
		tableReservations: {&Reservation{}, &Reservation{ReservationID: "r", TenantRef: "t", WorkItemID: "w", HostID: "h", Index: 7},
			&Reservation{ReservationID: z, TenantRef: z, Index: math.MaxUint64}, &Reservation{TenantRef: "t", HostID: "h"}},
		tableResActive: {&activeRow{}, &activeRow{TenantRef: "t", WorkItemID: "w", ReservationID: "r", ExpiresAtMs: math.MinInt64},
			&activeRow{TenantRef: z, ReservationID: z, ExpiresAtMs: math.MaxInt64}},
		tableResKeys: {&keyRow{}, &keyRow{Kind: keyBranch, TenantRef: "t", A: "repo", B: "b"}, &keyRow{Kind: keyRepository, TenantRef: z, A: z, B: noB}},
		tableFairness: {&debtRow{}, &debtRow{TenantRef: "t", Profile: "p", Group: "g", AnchorMs: -5},
			&debtRow{TenantRef: z, Profile: z, Group: z, AnchorMs: math.MaxInt64}},
		tableResEnded:      {&resTimeRow{}, &resTimeRow{AtMs: math.MinInt64, ReservationID: "r"}, &resTimeRow{AtMs: 1, ReservationID: z}},
		tableProfileSource: {&profileSource{}, &profileSource{ID: profileSourceID}, &profileSource{ID: z}},
	}
	checked := 0
	for _, table := range Module().Tables {
		keyed := false
		for _, ix := range table.Schema.Indexes {
			_, ok := ix.Indexer.(*statestore.Keyed)
			keyed = keyed || ok
		}
		if !keyed {
			continue
		}
		if len(rows[table.Schema.Name]) == 0 {
			t.Errorf("no rows to check table %s with", table.Schema.Name)
			continue
		}
		if err := statestore.VerifyKeys(table.Schema, rows[table.Schema.Name]...); err != nil {
			t.Error(err)
		}
		checked++
	}
	if checked < len(rows) {
		t.Errorf("%d tables with typed keys checked, want every one of the %d listed", checked, len(rows))
	}
}
