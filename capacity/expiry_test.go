package capacity_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
)

func tick(t *testing.T, l *fsmtest.Local, budget int) fsm.TickResult {
	t.Helper()
	res, err := l.Propose(context.Background(), log.Command{Type: fsm.CmdTick, Version: 1,
		Payload: log.MustMarshal(fsm.Tick{IdemRetentionMs: time.Hour.Milliseconds(), FeedRetain: 1 << 20, Budget: budget})})
	if err != nil || res.Err != nil {
		t.Fatalf("tick: %v %v", err, res.Err)
	}
	var out fsm.TickResult
	if err := log.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// leaseNow reads one lease as the FSM holds it (nil once pruned).
func leaseNow(t *testing.T, s *capacity.Service, id string) *capacity.Lease {
	t.Helper()
	res, err := s.Reconcile(context.Background(), capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", LeaseID: id, MaxCount: 1}, fsm.Linearizable)
	if err != nil {
		t.Fatalf("reconcile of %s: %v", id, err)
	}
	if len(res.Leases) == 0 {
		return nil
	}
	return &res.Leases[0]
}

func usedOf(t *testing.T, s *capacity.Service, cell string) uint64 {
	t.Helper()
	res, err := s.Status(context.Background(), capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", CellID: cell, MaxCount: 1}, fsm.Linearizable)
	if err != nil || len(res.Cells) != 1 {
		t.Fatalf("status of %s: %+v %v", cell, res, err)
	}
	var used uint64
	for _, c := range res.Cells[0].Classes {
		used += c.Used
	}
	return used
}

func refOf(l capacity.Lease) capacity.LeaseRef {
	return capacity.LeaseRef{LeaseID: l.LeaseID, LeaseEpoch: l.LeaseEpoch, Fence: l.Fence}
}

func renewReq(ttl int64, nowMs int64, leases ...capacity.Lease) capacity.LeasesRequest {
	r := capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a", TTLMs: ttl, NowMs: nowMs}
	for _, l := range leases {
		r.Leases = append(r.Leases, refOf(l))
	}
	return r
}

// Request clocks are ignored: every timestamp is FSM time, which is the
// largest stamp the proposer has put on a command and never goes back.
func TestTimestampsComeFromTheFSMClock(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	upd, err := s.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t", NowMs: 42,
		Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"x": 100}}})
	if err != nil || upd.Cell.UpdatedAtMs != fsmtest.Epoch || upd.NowMs != fsmtest.Epoch {
		t.Fatalf("update with now_ms 42: %+v %v, want FSM time %d", upd, err, fsmtest.Epoch)
	}
	for i, nowMs := range []int64{1, -1 << 40, 1 << 62, fsmtest.Epoch + time.Hour.Milliseconds()} {
		req := acquire(fmt.Sprintf("k%d", i), capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1})
		req.NowMs = nowMs
		res, err := s.Acquire(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		lease := res.Leases[0]
		if now := l.FSM.Now(); res.NowMs != now || lease.AcquiredAtMs != now || lease.ExpiresAtMs != now+req.TTLMs {
			t.Errorf("acquire with now_ms %d: now %d, acquired %d, expires %d; FSM time %d, TTL %d",
				nowMs, res.NowMs, lease.AcquiredAtMs, lease.ExpiresAtMs, now, req.TTLMs)
		}
		l.Advance(time.Second)
	}
	// The proposer's clock going back does not move FSM time back.
	l.SetClock(fsmtest.Epoch - time.Hour.Milliseconds())
	res, err := s.Acquire(ctx, acquire("back", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}))
	if err != nil {
		t.Fatal(err)
	}
	want := fsmtest.Epoch + 3000 // the last stamp applied
	if res.NowMs != want || res.Leases[0].AcquiredAtMs != want {
		t.Errorf("after the proposer's clock went back: now %d, acquired %d; want FSM time %d", res.NowMs, res.Leases[0].AcquiredAtMs, want)
	}
	// Renew and reclaim ignore now_ms too: a far-future now_ms neither
	// expires nor extends anything.
	rn, err := s.Renew(ctx, renewReq(0, 1<<62, res.Leases[0]))
	if err != nil || rn.Leases[0].ExpiresAtMs != want+res.Leases[0].TTLMs {
		t.Errorf("renew with a far-future now_ms: %+v %v, want expiry %d", rn, err, want+res.Leases[0].TTLMs)
	}
	rc, err := s.Reclaim(ctx, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 128, NowMs: 1 << 62})
	if err != nil || len(rc.ReclaimedLeaseIDs) != 0 || rc.NowMs != want {
		t.Errorf("reclaim with a far-future now_ms: %+v %v", rc, err)
	}
	st, err := s.Status(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 1}, fsm.Linearizable)
	if err != nil || st.NowMs != want {
		t.Errorf("status: %+v %v, want now %d", st, err, want)
	}
}

// Renewal moves the deadline to FSM now + TTL, the deadline is now >=
// expires_at, and an expired lease never comes back.
func TestRenewMovesTheDeadlineFromFSMNow(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	cell(t, s, "c", map[string]uint64{"x": 10})
	res, err := s.Acquire(ctx, acquire("k", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 3}))
	if err != nil {
		t.Fatal(err)
	}
	lease := res.Leases[0] // TTL 10 s
	l.Advance(4 * time.Second)
	rn, err := s.Renew(ctx, renewReq(0, 0, lease))
	if err != nil {
		t.Fatal(err)
	}
	got := rn.Leases[0]
	if got.ExpiresAtMs != lease.AcquiredAtMs+4000+10_000 || got.LeaseEpoch != 2 || got.Renewals != 1 || got.AcquiredAtMs != lease.AcquiredAtMs || got.Fence != lease.Fence {
		t.Fatalf("renew 4 s in: %+v, want expiry %d, epoch 2, one renewal, same fence and acquisition", got, lease.AcquiredAtMs+14_000)
	}
	// A renewal TTL applies to that renewal only.
	l.Advance(time.Second)
	rn, err = s.Renew(ctx, renewReq(2000, 0, got))
	if err != nil || rn.Leases[0].ExpiresAtMs != l.FSM.Now()+2000 || rn.Leases[0].TTLMs != 10_000 {
		t.Fatalf("renew for 2 s: %+v %v", rn, err)
	}
	got = rn.Leases[0]
	// One millisecond before the deadline it still renews (with its own
	// TTL); at the deadline it is expired.
	l.SetClock(got.ExpiresAtMs - 1)
	rn, err = s.Renew(ctx, renewReq(0, 0, got))
	if err != nil || rn.Leases[0].ExpiresAtMs != got.ExpiresAtMs-1+10_000 {
		t.Fatalf("renew 1 ms before the deadline: %+v %v", rn, err)
	}
	got = rn.Leases[0]
	l.SetClock(got.ExpiresAtMs)
	for _, call := range []func(context.Context, capacity.LeasesRequest) (*capacity.LeasesResult, error){s.Renew, s.Release} {
		if res, err := call(ctx, renewReq(0, 0, got)); !errors.Is(err, errs.Expired) || res.Decision != capacity.Expired {
			t.Fatalf("renew or release at the deadline: %+v %v, want expired", res, err)
		}
	}
	// Until something reclaims it, the lease still reads active and holds
	// its usage; it is reclaimable, never renewable.
	if now := leaseNow(t, s, got.LeaseID); now.State != capacity.LeaseActive || now.ExpiresAtMs != got.ExpiresAtMs || usedOf(t, s, "c") != 3 {
		t.Fatalf("lease at its deadline before any reclaim: %+v, used %d", now, usedOf(t, s, "c"))
	}
	rc, err := s.Reclaim(ctx, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 1})
	if err != nil || len(rc.ReclaimedLeaseIDs) != 1 {
		t.Fatalf("reclaim: %+v %v", rc, err)
	}
	if now := leaseNow(t, s, got.LeaseID); now.State != capacity.LeaseExpired || now.EndedAtMs != got.ExpiresAtMs || usedOf(t, s, "c") != 0 {
		t.Fatalf("reclaimed lease: %+v, used %d", now, usedOf(t, s, "c"))
	}
	l.Advance(time.Hour)
	if res, err := s.Renew(ctx, renewReq(0, 0, got)); !errors.Is(err, errs.Expired) {
		t.Fatalf("renew of a reclaimed lease: %+v %v", res, err)
	}
	checkStored(t, l.FSM)
}

// Tick expires due leases oldest first across tenants, at most its budget
// per tick.
func TestTickExpiresWithinItsBudget(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	cell(t, s, "c", map[string]uint64{"x": 100})
	if _, err := s.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "u", Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"x": 100}}}); err != nil {
		t.Fatal(err)
	}
	type due struct {
		tenant, id string
		at         int64
	}
	var leases []due
	for i := 0; i < 10; i++ {
		req := acquire(fmt.Sprintf("k%d", i), capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1})
		req.TTLMs = int64(1900 - 100*i) // later acquires expire earlier
		if i%3 == 0 {
			req.TenantRef = "u"
		}
		res, err := s.Acquire(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, due{req.TenantRef, res.Leases[0].LeaseID, res.Leases[0].ExpiresAtMs})
	}
	sort.Slice(leases, func(i, j int) bool { return leases[i].at < leases[j].at })
	if got := tick(t, l, 4096); got.ModuleTicks == 0 {
		t.Fatalf("tick ran no module: %+v", got)
	}
	if n := len(readStored(t, l.FSM).Ended); n != 0 {
		t.Fatalf("a tick before any deadline ended %d leases", n)
	}
	l.Advance(5 * time.Second)
	for done := 0; done < len(leases); done += 3 {
		tick(t, l, 3)
		st := checkStored(t, l.FSM)
		state := map[[2]string]capacity.Lease{}
		for _, ls := range st.Leases {
			state[[2]string{ls.TenantRef, ls.LeaseID}] = ls
		}
		for i, d := range leases {
			ls := state[[2]string{d.tenant, d.id}]
			if wantEnded := i < done+3; (ls.State == capacity.LeaseExpired) != wantEnded || wantEnded && ls.EndedAtMs != l.FSM.Now() {
				t.Fatalf("after ticks of budget 3 (%d done): lease %d (%s/%s, due %d) is %s ended at %d", done, i, d.tenant, d.id, d.at, ls.State, ls.EndedAtMs)
			}
		}
	}
}

// Tick forgets an ended lease once EndedLeaseRetention has passed since it
// ended, at most its budget per tick; until then Reconcile shows it.
func TestTickPrunesEndedLeasesAfterRetention(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	cell(t, s, "c", map[string]uint64{"x": 100})
	res, err := s.Acquire(ctx, acquire("k", repeatDemand(capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}, 5)...))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := s.Release(ctx, renewReq(0, 0, res.Leases...))
	if err != nil {
		t.Fatal(err)
	}
	endedAt := rel.Leases[0].EndedAtMs
	retention := capacity.EndedLeaseRetention.Milliseconds()
	l.SetClock(endedAt + retention - 1)
	tick(t, l, 4096)
	for _, ls := range res.Leases {
		if got := leaseNow(t, s, ls.LeaseID); got == nil || got.State != capacity.LeaseReleased {
			t.Fatalf("lease %s 1 ms before its retention ends: %+v", ls.LeaseID, got)
		}
	}
	l.SetClock(endedAt + retention)
	for left := 5; left > 0; left -= 2 {
		tick(t, l, 2)
		st := checkStored(t, l.FSM)
		if want := max(left-2, 0); len(st.Leases) != want || len(st.Ended) != want {
			t.Fatalf("after a tick of budget 2 with %d to prune: %d leases, %d ended rows stored", left, len(st.Leases), len(st.Ended))
		}
	}
	// A pruned lease is gone, not back: renewing it finds nothing.
	if got, err := s.Renew(ctx, renewReq(0, 0, res.Leases[0])); !errors.Is(err, errs.Invalid) || got.Decision != capacity.Invalid {
		t.Fatalf("renew of a pruned lease: %+v %v", got, err)
	}
	// Leases that expire are kept as long after their end.
	res, err = s.Acquire(ctx, acquire("k2", capacity.Demand{CellID: "c", ResourceClass: "x", Amount: 1}))
	if err != nil {
		t.Fatal(err)
	}
	l.SetClock(res.Leases[0].ExpiresAtMs)
	tick(t, l, 1)
	expired := leaseNow(t, s, res.Leases[0].LeaseID)
	if expired == nil || expired.State != capacity.LeaseExpired || expired.EndedAtMs != res.Leases[0].ExpiresAtMs {
		t.Fatalf("a lease ticked at its deadline: %+v", expired)
	}
	l.SetClock(expired.EndedAtMs + retention - 1)
	tick(t, l, 1)
	if leaseNow(t, s, expired.LeaseID) == nil {
		t.Fatal("an expired lease was pruned before its retention ended")
	}
	l.Advance(time.Millisecond)
	tick(t, l, 1)
	if got := leaseNow(t, s, expired.LeaseID); got != nil {
		t.Fatalf("an expired lease outlived its retention: %+v", got)
	}
}

// fill acquires n leases of 1 on cell with ttl, 16 per acquire, and
// returns their ids.
func fill(t *testing.T, s *capacity.Service, key, cell string, n int, ttl int64) []string {
	t.Helper()
	var ids []string
	for i := 0; len(ids) < n; i++ {
		req := acquire(fmt.Sprintf("%s-%d", key, i), repeatDemand(capacity.Demand{CellID: cell, ResourceClass: "x", Amount: 1}, min(16, n-len(ids)))...)
		req.TTLMs = ttl
		res, err := s.Acquire(context.Background(), req)
		if err != nil {
			t.Fatalf("fill %s: %v", cell, err)
		}
		for _, l := range res.Leases {
			ids = append(ids, l.LeaseID)
		}
	}
	return ids
}

// reclaimAll follows next_cursor from a first reclaim to the end and
// returns every id reclaimed and the number of pages.
func reclaimAll(t *testing.T, s *capacity.Service, cell string, max int) ([]string, int) {
	t.Helper()
	var ids []string
	cursor := ""
	for pages := 1; ; pages++ {
		res, err := s.Reclaim(context.Background(), capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", CellID: cell, MaxCount: max, Cursor: cursor})
		if err != nil {
			t.Fatalf("reclaim page %d: %v", pages, err)
		}
		if len(res.ReclaimedLeaseIDs) > max {
			t.Fatalf("reclaim page %d of max %d returned %d", pages, max, len(res.ReclaimedLeaseIDs))
		}
		ids = append(ids, res.ReclaimedLeaseIDs...)
		if res.NextCursor == "" {
			return ids, pages
		}
		if res.NextCursor == cursor {
			t.Fatalf("reclaim page %d returned the cursor it was given", pages)
		}
		cursor = res.NextCursor
		if pages > 10_000 {
			t.Fatal("reclaim pages do not end")
		}
	}
}

func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("%s: lease %s reclaimed %d times, want once", what, id, seen[id])
		}
		delete(seen, id)
	}
	for id, n := range seen {
		t.Errorf("%s: lease %s reclaimed %d times, want never", what, id, n)
	}
}

func TestReclaimPagesFollowTheirCursor(t *testing.T) {
	l, s := newService(t)
	cell(t, s, "c", map[string]uint64{"x": 1000})
	ids := fill(t, s, "a", "c", 300, 1000)
	l.Advance(999 * time.Millisecond)
	if got, pages := reclaimAll(t, s, "", 128); len(got) != 0 || pages != 1 {
		t.Fatalf("reclaim 1 ms before the deadline: %d leases in %d pages", len(got), pages)
	}
	l.Advance(time.Millisecond)
	got, pages := reclaimAll(t, s, "", 50)
	sameSet(t, "pages of 50", got, ids)
	if pages != 6 && pages != 7 {
		t.Errorf("300 leases in pages of 50 took %d pages", pages)
	}
	if used := usedOf(t, s, "c"); used != 0 {
		t.Errorf("after reclaiming every lease the cell uses %d", used)
	}
	checkStored(t, l.FSM)
	ids = fill(t, s, "b", "c", 300, 1000)
	l.Advance(time.Second)
	got, pages = reclaimAll(t, s, "", 128)
	sameSet(t, "pages of 128", got, ids)
	if pages != 3 {
		t.Errorf("300 leases in pages of 128 took %d pages", pages)
	}
	checkStored(t, l.FSM)
}

// A reclaim of one cell takes only that cell's leases, and its cursor gets
// past a long run of another cell's expired leases (more than one reclaim
// examines) without reclaiming any of them.
func TestReclaimOfOneCell(t *testing.T) {
	ctx := context.Background()
	l, s := newService(t)
	cell(t, s, "a", map[string]uint64{"x": 100})
	cell(t, s, "b", map[string]uint64{"x": 2000})
	if _, err := s.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "u", Cell: capacity.CellSpec{CellID: "a", Capacities: map[string]uint64{"x": 10}}}); err != nil {
		t.Fatal(err)
	}
	other := acquire("other", capacity.Demand{CellID: "a", ResourceClass: "x", Amount: 1})
	other.TenantRef, other.TTLMs = "u", 1
	if _, err := s.Acquire(ctx, other); err != nil {
		t.Fatal(err)
	}
	bIDs := fill(t, s, "b", "b", 1100, 1000) // due first
	aIDs := fill(t, s, "a", "a", 7, 2000)
	l.Advance(3 * time.Second)
	got, pages := reclaimAll(t, s, "a", 3)
	sameSet(t, "cell a", got, aIDs)
	if pages < 3 {
		t.Errorf("7 leases of a behind 1100 of b in pages of 3 took %d pages", pages)
	}
	if used := usedOf(t, s, "b"); used != 1100 {
		t.Errorf("a reclaim of cell a changed cell b's usage to %d", used)
	}
	if got, _ := reclaimAll(t, s, "c", 128); len(got) != 0 {
		t.Errorf("a reclaim of a cell without leases reclaimed %v", got)
	}
	got, _ = reclaimAll(t, s, "", 128)
	sameSet(t, "the rest of the tenant", got, bIDs)
	st := checkStored(t, l.FSM)
	for _, ls := range st.Leases {
		if ls.TenantRef == "u" && ls.State != capacity.LeaseActive {
			t.Errorf("a reclaim of tenant t ended tenant u's lease %s", ls.LeaseID)
		}
	}
}
