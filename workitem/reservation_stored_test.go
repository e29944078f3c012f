package workitem_test

import (
	"fmt"
	"sort"
	"strings"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/workitem"
)

// The reservation tables as stored (the snapshot stream), with the row
// types mirrored from their msgpack names, and the invariants they keep.
type (
	storedActive struct {
		TenantRef     string `msgpack:"tenant_ref"`
		WorkItemID    string `msgpack:"work_item_id"`
		ReservationID string `msgpack:"reservation_id"`
		HostID        string `msgpack:"host_id"`
		ExpiresAtMs   int64  `msgpack:"expires_at_ms"`
	}
	storedKey struct {
		Kind      string `msgpack:"kind"`
		TenantRef string `msgpack:"tenant_ref"`
		A         string `msgpack:"a"`
		B         string `msgpack:"b"`
		Holder    string `msgpack:"holder"`
		Count     int64  `msgpack:"count"`
		Limit     int64  `msgpack:"limit"`
	}
	storedDebt struct {
		TenantRef string `msgpack:"tenant_ref"`
		Profile   string `msgpack:"profile"`
		Group     string `msgpack:"group"`
		DebtMilli int64  `msgpack:"debt_milli"`
		AnchorMs  int64  `msgpack:"anchor_ms"`
		DecayPerS int64  `msgpack:"decay_per_s"`
	}
	storedResTime struct {
		AtMs          int64  `msgpack:"at_ms"`
		ReservationID string `msgpack:"reservation_id"`
	}
)

// resState is the reservation tables of one FSM.
type resState struct {
	storedState
	Hosts        []workitem.Host
	Profiles     []workitem.Profile
	Reservations []workitem.Reservation
	Active       []storedActive
	Keys         []storedKey
	Debts        []storedDebt
	Ended        []storedResTime
}

func readRes(t fataler, f *fsm.FSM) resState {
	t.Helper()
	st := resState{storedState: readStored(t, f)}
	s := st.Stored
	st.Hosts = fsmtest.Rows[workitem.Host](t, s, "workitem_hosts")
	st.Profiles = fsmtest.Rows[workitem.Profile](t, s, "workitem_profiles")
	st.Reservations = fsmtest.Rows[workitem.Reservation](t, s, "workitem_reservations")
	st.Active = fsmtest.Rows[storedActive](t, s, "workitem_res_active")
	st.Keys = fsmtest.Rows[storedKey](t, s, "workitem_res_keys")
	st.Debts = fsmtest.Rows[storedDebt](t, s, "workitem_fairness")
	st.Ended = fsmtest.Rows[storedResTime](t, s, "workitem_res_ended")
	return st
}

// resInvariants lists every way the reservation tables break the rules:
// a host's use is the sum of its active reservations and within its
// capacity; each active reservation's claim is the item's current one;
// the keys are exactly what the active reservations hold (one exclusive
// holder per repository and branch, never beside shared ones; a
// concurrency key within every holder's limit is checked by the model);
// debts are positive; ended reservations are indexed for retention.
func (s resState) resInvariants() []string {
	var bad []string
	badf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	items := map[[2]string]workitem.WorkItem{}
	for _, it := range s.Items {
		items[[2]string{it.TenantRef, it.WorkItemID}] = it
	}
	used := map[string]workitem.Dimensions{}
	count := map[string]int64{}
	type kk struct{ kind, tenant, a, b string }
	want := map[kk]storedKey{}
	key := func(kind, tenant, a, b string) storedKey {
		k := kk{kind, tenant, a, b}
		if row, ok := want[k]; ok {
			return row
		}
		return storedKey{Kind: kind, TenantRef: tenant, A: a, B: b}
	}
	hold := func(kind, tenant, a, b string, exclusive bool, id string, limit int64) {
		row := key(kind, tenant, a, b)
		if kind == "concurrency" {
			if row.Limit != 0 && row.Limit != limit {
				badf("concurrency key %s/%s held under limits %d and %d", tenant, a, row.Limit, limit)
			}
			row.Limit = limit
		}
		if exclusive {
			if row.Holder != "" {
				badf("%s %s/%s/%s held exclusively by %s and %s", kind, tenant, a, b, row.Holder, id)
			}
			row.Holder = id
		} else {
			row.Count++
		}
		want[kk{kind, tenant, a, b}] = row
	}
	active := map[string]workitem.Reservation{}
	ended := map[string]int64{}
	for _, r := range s.Reservations {
		if r.Status != workitem.ReservationActive {
			ended[r.ReservationID] = r.EndedAtMs
			if r.EndedAtMs == 0 || r.EndReason == "" {
				badf("ended reservation %s without end time or reason", r.ReservationID)
			}
			continue
		}
		active[r.ReservationID] = r
		it, ok := items[[2]string{r.TenantRef, r.WorkItemID}]
		if !ok || it.Status != workitem.StatusClaimed || it.Attempt != r.Attempt || it.Fence != r.Fence || it.ClaimExpiresAtMs != r.ExpiresAtMs {
			badf("active reservation %s (attempt %d fence %d) outlives its claim: item %+v", r.ReservationID, r.Attempt, r.Fence, it)
		}
		used[r.HostID] = used[r.HostID].Add(r.Dimensions)
		count[r.HostID]++
		k := r.Keys
		hold("repository", r.TenantRef, k.Repository, ".", k.RepositoryExclusive, r.ReservationID, 0)
		if k.Branch != "" {
			hold("branch", r.TenantRef, k.Repository, k.Branch, k.BranchExclusive, r.ReservationID, 0)
		}
		hold("concurrency", r.TenantRef, k.Concurrency, ".", false, r.ReservationID, k.ConcurrencyLimit)
		for _, a := range k.AntiAffinity {
			hold("anti_affinity", r.TenantRef, r.HostID, a, true, r.ReservationID, 0)
		}
	}
	for _, row := range want {
		if row.Kind == "concurrency" && row.Count > row.Limit {
			badf("concurrency key %s/%s has %d active reservations, above its limit %d", row.TenantRef, row.A, row.Count, row.Limit)
		}
		if row.Holder != "" && row.Count > 0 && (row.Kind == "repository" || row.Kind == "branch") {
			badf("%s %s/%s/%s held exclusively by %s beside %d shared holders", row.Kind, row.TenantRef, row.A, row.B, row.Holder, row.Count)
		}
	}
	for _, h := range s.Hosts {
		if h.Used != used[h.HostID] || h.Reservations != count[h.HostID] {
			badf("host %s uses %+v in %d reservations; its active reservations add up to %+v in %d", h.HostID, h.Used, h.Reservations, used[h.HostID], count[h.HostID])
		}
		over := h.Capacity.Sub(h.Used)
		if over.CPUMillis < 0 || over.MemoryMiB < 0 || over.DiskMiB < 0 || over.Processes < 0 {
			badf("host %s uses %+v above its capacity %+v", h.HostID, h.Used, h.Capacity)
		}
		delete(used, h.HostID)
	}
	for id := range used {
		badf("active reservations on missing host %s", id)
	}
	byItem := map[[2]string]bool{}
	for _, a := range s.Active {
		r, ok := active[a.ReservationID]
		if !ok || r.TenantRef != a.TenantRef || r.WorkItemID != a.WorkItemID || r.HostID != a.HostID || r.ExpiresAtMs != a.ExpiresAtMs {
			badf("active row %+v for reservation %+v", a, r)
		}
		byItem[[2]string{a.TenantRef, a.WorkItemID}] = true
		delete(active, a.ReservationID)
	}
	for id := range active {
		badf("active reservation %s not indexed", id)
	}
	for _, k := range s.Keys {
		w, ok := want[kk{k.Kind, k.TenantRef, k.A, k.B}]
		if !ok || w != k {
			badf("key row %+v; the active reservations make it %+v", k, w)
		}
		delete(want, kk{k.Kind, k.TenantRef, k.A, k.B})
	}
	for _, k := range want {
		badf("key %+v held but not stored", k)
	}
	for _, d := range s.Debts {
		if d.DebtMilli <= 0 || d.DecayPerS <= 0 {
			badf("debt row %+v", d)
		}
	}
	for _, e := range s.Ended {
		if at, ok := ended[e.ReservationID]; !ok || at != e.AtMs {
			badf("ended index %+v for a reservation ended at %d (%t)", e, at, ok)
		}
		delete(ended, e.ReservationID)
	}
	for id := range ended {
		badf("ended reservation %s not indexed", id)
	}
	sort.Strings(bad)
	return bad
}

// checkRes fails t if f's work-item or reservation tables break an
// invariant, and returns them.
func checkRes(t fataler, f *fsm.FSM) resState {
	t.Helper()
	st := readRes(t, f)
	if bad := append(st.invariants(), st.resInvariants()...); len(bad) > 0 {
		t.Fatalf("work-item tables break %d invariants:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	return st
}
