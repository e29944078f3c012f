package authority_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/nodes"
)

const ttl = 60 * time.Second // the TTL of request()

var (
	reserved     = authority.Reserved
	materialized = authority.Materialized
	landed       = authority.Landed
	tombstoned   = authority.Tombstoned
	released     = authority.Released
	expired      = authority.Expired

	visNone     = authority.VisibilityNone
	visRepo     = authority.VisibilityRepository
	visExternal = authority.VisibilityExternal

	allActions = []authority.Action{authority.Materialize, authority.Land, authority.Tombstone, authority.Release, authority.Expire}
)

func visRank(v authority.Visibility) int {
	return map[authority.Visibility]int{visNone: 0, visRepo: 1, visExternal: 2}[v]
}

// stateTime is the timestamp a record keeps for entering s.
func stateTime(r *authority.Record, s authority.State) int64 {
	switch s {
	case reserved:
		return r.ReservedAtMs
	case materialized:
		return r.MaterializedAtMs
	case landed:
		return r.LandedAtMs
	case tombstoned:
		return r.TombstonedAtMs
	case released:
		return r.ReleasedAtMs
	case expired:
		return r.ExpiredAtMs
	}
	return 0
}

// immutable is what no transition may change.
func immutable(r *authority.Record) string {
	return fmt.Sprint(r.ConceptID, r.Namespace, r.Number, r.PolicyVersion, r.RangeMin, r.RangeMax, r.TenantRef, r.RepositoryRef,
		r.LaneRef, r.OwnerRef, r.RequestRef, r.DesignRef, r.ProvenanceRefs, r.PurposeDigest, r.Fingerprint, r.ReservationID,
		r.CreatedAtMs, r.ExpiresAtMs, r.ReservedAtMs)
}

type lifeStep struct {
	advance    time.Duration // before the action
	action     authority.Action
	state      authority.State
	visibility authority.Visibility
}

// Every transition the spec's state machine allows, along every path.
func TestLifecycleAllowedTransitions(t *testing.T) {
	m, l, r, x, e := authority.Materialize, authority.Land, authority.Release, authority.Tombstone, authority.Expire
	for _, tc := range []struct {
		name  string
		steps []lifeStep
	}{
		{"reserved-materialized-landed-tombstoned", []lifeStep{{0, m, materialized, visNone}, {0, l, landed, visRepo}, {0, x, tombstoned, visExternal}}},
		{"reserved-released", []lifeStep{{0, r, released, visNone}}},
		{"reserved-expired", []lifeStep{{ttl, e, expired, visNone}}},
		{"reserved-released-after-deadline", []lifeStep{{ttl, r, released, visNone}}},
		{"materialized-released", []lifeStep{{0, m, materialized, visNone}, {0, r, released, visNone}}},
		{"materialized-expired", []lifeStep{{0, m, materialized, visNone}, {ttl, e, expired, visNone}}},
		{"landed-release-becomes-tombstone", []lifeStep{{0, m, materialized, visNone}, {0, l, landed, visRepo}, {0, r, tombstoned, visExternal}}},
		{"landed-expiry-becomes-tombstone", []lifeStep{{0, m, materialized, visNone}, {0, l, landed, visRepo}, {ttl, e, tombstoned, visExternal}}},
		{"landed-tombstoned-after-deadline", []lifeStep{{0, m, materialized, visNone}, {0, l, landed, visRepo}, {ttl, x, tombstoned, visExternal}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			a := fixture(t)
			rec := mustReserve(t, a, request("RMDD-27", "alice", "r1"))
			if rec.State != reserved || rec.Fence == 0 || rec.PrevFence != 0 || rec.Visibility != visNone || rec.ReservedAtMs != fsmtest.Epoch ||
				rec.CreatedAtMs != fsmtest.Epoch || rec.UpdatedAtMs != fsmtest.Epoch || rec.ExpiresAtMs != fsmtest.Epoch+ttl.Milliseconds() {
				t.Fatalf("new claim: %+v", rec)
			}
			now := fsmtest.Epoch
			for _, st := range tc.steps {
				a.Advance(st.advance)
				now += st.advance.Milliseconds()
				res, err := a.Transition(ctx, holder(rec, st.action, rec.Fence))
				if err != nil {
					t.Fatalf("%s from %s at fence %d: %v", st.action, rec.State, rec.Fence, err)
				}
				next := res.Record
				if res.Replayed {
					t.Errorf("%s from %s: replayed", st.action, rec.State)
				}
				if next.State != st.state || next.Visibility != st.visibility {
					t.Errorf("%s from %s: %s/%s, want %s/%s", st.action, rec.State, next.State, next.Visibility, st.state, st.visibility)
				}
				if !follows(next, rec) {
					t.Errorf("%s: fence %d (replacing %d) after %d, want a higher one replacing it", st.action, next.Fence, next.PrevFence, rec.Fence)
				}
				if visRank(next.Visibility) < visRank(rec.Visibility) {
					t.Errorf("%s: visibility went down from %s to %s", st.action, rec.Visibility, next.Visibility)
				}
				if stateTime(next, next.State) != now || next.UpdatedAtMs != now {
					t.Errorf("%s: entered %s at %d, updated %d, want FSM time %d", st.action, next.State, stateTime(next, next.State), next.UpdatedAtMs, now)
				}
				for _, s := range []authority.State{reserved, materialized, landed} {
					if stateTime(rec, s) != 0 && stateTime(next, s) != stateTime(rec, s) {
						t.Errorf("%s: the %s timestamp changed from %d to %d", st.action, s, stateTime(rec, s), stateTime(next, s))
					}
				}
				if immutable(next) != immutable(rec) {
					t.Errorf("%s changed identity fields:\n%s\n%s", st.action, immutable(rec), immutable(next))
				}
				if got := mustGet(t, a, "RMDD-27", "tenant-a"); !reflect.DeepEqual(got, next) {
					t.Errorf("get after %s: %+v, want %+v", st.action, got, next)
				}
				rec = next
			}
		})
	}
}

// reach brings a fresh claim of RMDD-27 to state s, before its deadline
// except for expired.
func reach(t *testing.T, a *authority.FixtureConceptReservationAuthority, s authority.State) *authority.Record {
	t.Helper()
	rec := mustReserve(t, a, request("RMDD-27", "alice", "r1"))
	path := map[authority.State][]authority.Action{
		reserved:     nil,
		materialized: {authority.Materialize},
		landed:       {authority.Materialize, authority.Land},
		tombstoned:   {authority.Materialize, authority.Land, authority.Tombstone},
		released:     {authority.Release},
		expired:      {authority.Expire},
	}[s]
	for _, act := range path {
		if act == authority.Expire {
			a.Advance(ttl)
		}
		rec = mustStep(t, a, rec, act)
	}
	if rec.State != s {
		t.Fatalf("reached %s, want %s", rec.State, s)
	}
	return rec
}

// Every transition the state machine does not have is a conflict and
// changes nothing.
func TestLifecycleDisallowedTransitions(t *testing.T) {
	allowed := map[authority.State][]authority.Action{
		reserved:     {authority.Materialize, authority.Release, authority.Expire},
		materialized: {authority.Land, authority.Release, authority.Expire},
		landed:       {authority.Tombstone, authority.Release, authority.Expire},
	}
	for _, s := range []authority.State{reserved, materialized, landed, tombstoned, released, expired} {
		for _, act := range allActions {
			if contains(allowed[s], act) {
				continue
			}
			t.Run(fmt.Sprintf("%s-from-%s", act, s), func(t *testing.T) {
				a := fixture(t)
				rec := reach(t, a, s)
				a.Advance(time.Millisecond)
				_, err := a.Transition(context.Background(), holder(rec, act, rec.Fence))
				wantCode(t, fmt.Sprintf("%s from %s", act, s), err, errs.CodeConflict)
				if got := mustGet(t, a, rec.ConceptID, rec.TenantRef); !reflect.DeepEqual(got, rec) {
					t.Fatalf("a refused %s changed the record:\n%+v\n%+v", act, rec, got)
				}
			})
		}
	}
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Only FSM time decides expiry: now >= expires_at.
func TestExpiryDeadline(t *testing.T) {
	ctx := context.Background()
	for _, from := range []authority.State{reserved, materialized} {
		t.Run("expire-"+string(from), func(t *testing.T) {
			a := fixture(t)
			rec := reach(t, a, from)
			a.Advance(ttl - time.Millisecond)
			_, err := a.Transition(ctx, holder(rec, authority.Expire, rec.Fence))
			wantCode(t, "expire 1 ms before the deadline", err, errs.CodeConflict)
			if got := mustGet(t, a, rec.ConceptID, rec.TenantRef); !reflect.DeepEqual(got, rec) {
				t.Fatalf("refused expiry changed the record: %+v", got)
			}
			a.Advance(time.Millisecond)
			res, err := a.Transition(ctx, holder(rec, authority.Expire, rec.Fence))
			if err != nil || res.Record.State != expired || res.Record.ExpiredAtMs != rec.ExpiresAtMs || !follows(res.Record, rec) {
				t.Fatalf("expire at the deadline: %+v %v", res, err)
			}
		})
	}
	// Materialize and land need the deadline not to have passed.
	for _, tc := range []struct {
		from   authority.State
		action authority.Action
	}{{reserved, authority.Materialize}, {materialized, authority.Land}} {
		t.Run(string(tc.action)+"-at-the-deadline", func(t *testing.T) {
			a := fixture(t)
			rec := reach(t, a, tc.from)
			a.Advance(ttl - time.Millisecond)
			// One millisecond before, on a second claim, the step is fine.
			other := mustReserve(t, a, request("RMDD-28", "alice", "r2"))
			if tc.from == materialized {
				mustStep(t, a, other, authority.Materialize)
			}
			a.Advance(time.Millisecond)
			_, err := a.Transition(ctx, holder(rec, tc.action, rec.Fence))
			wantCode(t, fmt.Sprintf("%s at the deadline", tc.action), err, errs.CodeExpired)
			if got := mustGet(t, a, rec.ConceptID, rec.TenantRef); !reflect.DeepEqual(got, rec) {
				t.Fatalf("refused %s changed the record: %+v", tc.action, got)
			}
		})
	}
	t.Run("step-1ms-before-the-deadline", func(t *testing.T) {
		a := fixture(t)
		rec := mustReserve(t, a, request("RMDD-27", "alice", "r1"))
		a.Advance(ttl - 2*time.Millisecond)
		rec = mustStep(t, a, rec, authority.Materialize)
		a.Advance(time.Millisecond)
		rec = mustStep(t, a, rec, authority.Land)
		if rec.State != landed {
			t.Fatalf("land 1 ms before the deadline: %+v", rec)
		}
	})
	// A landed claim's expiry is promoted to a tombstone, but an expiry is
	// still accepted only once its deadline has passed.
	t.Run("expire-landed", func(t *testing.T) {
		a := fixture(t)
		rec := reach(t, a, landed)
		a.Advance(ttl - time.Millisecond)
		_, err := a.Transition(ctx, holder(rec, authority.Expire, rec.Fence))
		wantCode(t, "expire of a landed claim 1 ms before its deadline", err, errs.CodeConflict)
		a.Advance(time.Millisecond)
		res, err := a.Transition(ctx, holder(rec, authority.Expire, rec.Fence))
		if err != nil || res.Record.State != tombstoned || res.Record.Visibility != visExternal {
			t.Fatalf("expire of a landed claim at its deadline: %+v %v", res, err)
		}
	})
	// The fixture's clock moves only with Advance.
	t.Run("no-wall-clock", func(t *testing.T) {
		a := fixture(t)
		req := request("RMDD-27", "alice", "r1")
		req.TTLMs = authority.MinTTL.Milliseconds()
		rec := mustReserve(t, a, req)
		time.Sleep(authority.MinTTL + 50*time.Millisecond)
		_, err := a.Transition(ctx, holder(rec, authority.Expire, rec.Fence))
		wantCode(t, "expire after a wall-clock wait", err, errs.CodeConflict)
	})
}

// An exact retry of the committed transition by its holder replays it;
// every other stale call fails and changes nothing.
func TestTransitionRetriesAndStaleCalls(t *testing.T) {
	ctx := context.Background()
	a := fixture(t)
	r1 := mustReserve(t, a, request("RMDD-27", "alice", "r1"))
	r2 := mustStep(t, a, r1, authority.Materialize)

	res, err := a.Transition(ctx, holder(r1, authority.Materialize, r1.Fence))
	if err != nil || !res.Replayed || !reflect.DeepEqual(res.Record, r2) {
		t.Fatalf("retry of materialize with the reserved fence: %+v %v, want the committed record replayed", res, err)
	}
	a.Advance(time.Second)
	res, err = a.Transition(ctx, holder(r1, authority.Materialize, r1.Fence))
	if err != nil || !res.Replayed || !reflect.DeepEqual(res.Record, r2) {
		t.Fatalf("later retry of materialize: %+v %v", res, err)
	}
	r3 := mustStep(t, a, r2, authority.Land)
	res, err = a.Transition(ctx, holder(r1, authority.Land, r2.Fence))
	if err != nil || !res.Replayed || !reflect.DeepEqual(res.Record, r3) {
		t.Fatalf("retry of land with the materialized fence: %+v %v", res, err)
	}

	otherOwner := holder(r3, authority.Tombstone, r3.Fence)
	otherOwner.OwnerRef = "bob"
	otherReservation := holder(r3, authority.Tombstone, r3.Fence)
	otherReservation.ReservationID = "rsv-000000000000000000000000"
	otherPrint := holder(r3, authority.Tombstone, r3.Fence)
	otherPrint.Fingerprint = "v1:" + strings.Repeat("0", 64)
	otherOwnerRetry := holder(r3, authority.Land, r2.Fence)
	otherOwnerRetry.OwnerRef = "bob"
	for _, tc := range []struct {
		name string
		req  authority.TransitionRequest
	}{
		{"older fence, next action", holder(r3, authority.Tombstone, r1.Fence)},
		{"older fence, its own action", holder(r3, authority.Materialize, r1.Fence)},
		{"previous fence, another action", holder(r3, authority.Materialize, r2.Fence)},
		{"previous fence, release instead of land", holder(r3, authority.Release, r2.Fence)},
		{"previous fence, expire instead of land", holder(r3, authority.Expire, r2.Fence)},
		{"future fence", holder(r3, authority.Tombstone, r3.Fence+1)},
		{"far future fence", holder(r3, authority.Tombstone, 1<<62)},
		{"other owner", otherOwner},
		{"other reservation", otherReservation},
		{"other fingerprint", otherPrint},
		{"exact retry but by another owner", otherOwnerRetry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.Transition(ctx, tc.req)
			wantCode(t, tc.name, err, errs.CodeStaleFence)
			if got := mustGet(t, a, "RMDD-27", "tenant-a"); !reflect.DeepEqual(got, r3) {
				t.Fatalf("a stale call changed the record: %+v", got)
			}
		})
	}
	// The retry of a different action right after a materialize.
	b := fixture(t)
	m1 := mustReserve(t, b, request("RMDD-27", "alice", "r1"))
	m2 := mustStep(t, b, m1, authority.Materialize)
	for _, act := range []authority.Action{authority.Release, authority.Expire, authority.Land, authority.Tombstone} {
		_, err := b.Transition(ctx, holder(m1, act, m1.Fence))
		wantCode(t, string(act)+" with the fence before a materialize", err, errs.CodeStaleFence)
	}
	if got := mustGet(t, b, "RMDD-27", "tenant-a"); !reflect.DeepEqual(got, m2) {
		t.Fatalf("stale calls changed the record: %+v", got)
	}
}

// Another tenant can neither read nor move a claim, and learns nothing
// about it from the errors.
func TestOtherTenantGetsNotFound(t *testing.T) {
	ctx := context.Background()
	a := fixture(t)
	req := request("RMDD-27", "alice", "r1")
	rec := mustReserve(t, a, req)
	_, err := a.Get(ctx, "RMDD-27", "tenant-b")
	wantCode(t, "get as another tenant", err, errs.CodeNotFound)
	notFound := err.Error()
	_, err = a.Get(ctx, "RMDD-28", "tenant-b")
	wantCode(t, "get of a free id", err, errs.CodeNotFound)
	if strings.ReplaceAll(err.Error(), "RMDD-28", "RMDD-27") != notFound {
		t.Errorf("a held id reads differently from a free one: %q vs %q", notFound, err)
	}
	for _, act := range allActions {
		for _, fence := range []uint64{rec.Fence, rec.Fence + 1, 7} {
			tr := holder(rec, act, fence)
			tr.TenantRef = "tenant-b"
			_, err := a.Transition(ctx, tr)
			wantCode(t, fmt.Sprintf("%s as another tenant", act), err, errs.CodeNotFound)
			for _, secret := range []string{"tenant-a", "alice", "r1", rec.ReservationID, rec.Fingerprint, req.PurposeDigest} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("%s as another tenant: error %q reveals %q", act, err, secret)
				}
			}
		}
	}
	page, err := a.List(ctx, authority.ListRequest{TenantRef: "tenant-b"})
	if err != nil || len(page.Records) != 0 {
		t.Fatalf("list of tenant-b: %+v %v", page, err)
	}
	if got := mustGet(t, a, "RMDD-27", "tenant-a"); !reflect.DeepEqual(got, rec) {
		t.Fatalf("another tenant changed the record: %+v", got)
	}
}

// No lifecycle step deletes the node: the record stays readable.
func TestNodesAreNeverDeleted(t *testing.T) {
	for _, s := range []authority.State{tombstoned, released, expired} {
		t.Run(string(s), func(t *testing.T) {
			a := fixture(t)
			rec := reach(t, a, s)
			a.Advance(10 * ttl)
			if got := mustGet(t, a, "RMDD-27", "tenant-a"); !reflect.DeepEqual(got, rec) {
				t.Fatalf("get after %s: %+v, want %+v", s, got, rec)
			}
			if got := mustGet(t, a, "RMDD-27", ""); !reflect.DeepEqual(got, rec) {
				t.Fatalf("untenanted get after %s: %+v", s, got)
			}
			page, err := a.List(context.Background(), authority.ListRequest{TenantRef: "tenant-a"})
			if err != nil || len(page.Records) != 1 || !reflect.DeepEqual(page.Records[0], rec) {
				t.Fatalf("list after %s: %+v %v", s, page, err)
			}
		})
	}
}

func TestReclaim(t *testing.T) {
	ctx := context.Background()
	// Reclaimable: never repository-visible, and released, expired, or
	// held past its deadline without being marked expired.
	for _, tc := range []struct {
		name    string
		from    authority.State
		release bool
		advance time.Duration
	}{
		{"released-reserved", released, false, 0},
		{"released-materialized", materialized, true, 0},
		{"expired", expired, false, 0},
		{"reserved-past-deadline", reserved, false, ttl},
		{"materialized-past-deadline", materialized, false, ttl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := fixture(t)
			old := reach(t, a, tc.from)
			if tc.release {
				old = mustStep(t, a, old, authority.Release)
			}
			// Exactly at the deadline for the unmarked ones; a second
			// later for the others, so that the new claim's times differ.
			if tc.advance == 0 {
				tc.advance = time.Second
			}
			a.Advance(tc.advance)
			bobReq := request("RMDD-27", "bob", "r2")
			bobReq.TTLMs = 5000
			res, err := a.Reserve(ctx, bobReq)
			if err != nil || !res.Reclaimed || res.Created || res.Replayed {
				t.Fatalf("reclaim of a %s claim: %+v %v", old.State, res, err)
			}
			got := res.Record
			if !follows(got, old) || got.State != reserved || got.Visibility != visNone || got.OwnerRef != "bob" || got.RequestRef != "r2" {
				t.Fatalf("reclaimed record: %+v (old %+v)", got, old)
			}
			if got.ReservationID == old.ReservationID || got.Fingerprint == old.Fingerprint {
				t.Fatalf("reclaim kept the old reservation %s / fingerprint", got.ReservationID)
			}
			if got.MaterializedAtMs != 0 || got.ReleasedAtMs != 0 || got.ExpiredAtMs != 0 || got.LandedAtMs != 0 || got.TombstonedAtMs != 0 {
				t.Fatalf("reclaimed record kept old lifecycle times: %+v", got)
			}
			if got.CreatedAtMs <= old.CreatedAtMs || got.ReservedAtMs != got.CreatedAtMs || got.UpdatedAtMs != got.CreatedAtMs || got.ExpiresAtMs != got.CreatedAtMs+5000 {
				t.Fatalf("reclaimed record times: created %d reserved %d updated %d expires %d (old created %d)",
					got.CreatedAtMs, got.ReservedAtMs, got.UpdatedAtMs, got.ExpiresAtMs, old.CreatedAtMs)
			}
			if fresh := mustGet(t, a, "RMDD-27", "tenant-a"); !reflect.DeepEqual(fresh, got) {
				t.Fatalf("get after reclaim: %+v", fresh)
			}
			// The old holder lost every right to the id.
			for _, act := range allActions {
				_, err := a.Transition(ctx, holder(old, act, old.Fence))
				wantCode(t, string(act)+" by the old holder", err, errs.CodeStaleFence)
			}
			// The new holder can use it, and its retry replays.
			again, err := a.Reserve(ctx, bobReq)
			if err != nil || !again.Replayed || !reflect.DeepEqual(again.Record, got) {
				t.Fatalf("retry of the reclaim: %+v %v", again, err)
			}
			mustStep(t, a, got, authority.Materialize)
		})
	}
	t.Run("one-ms-before-the-deadline", func(t *testing.T) {
		a := fixture(t)
		old := reach(t, a, reserved)
		a.Advance(ttl - time.Millisecond)
		_, err := a.Reserve(ctx, request("RMDD-27", "bob", "r2"))
		wantCode(t, "reclaim 1 ms before the deadline", err, errs.CodeConflict)
		if got := mustGet(t, a, "RMDD-27", "tenant-a"); !reflect.DeepEqual(got, old) {
			t.Fatalf("refused reclaim changed the record: %+v", got)
		}
	})
	// Once repository-visible, never reclaimable, whatever the deadline.
	for _, tc := range []struct {
		name    string
		from    authority.State
		release bool
		advance time.Duration
	}{
		{"landed", landed, false, 0},
		{"landed-past-deadline", landed, false, 10 * ttl},
		{"tombstoned", tombstoned, false, 10 * ttl},
		{"landed-released-into-tombstone", landed, true, 10 * ttl},
	} {
		t.Run("never-"+tc.name, func(t *testing.T) {
			a := fixture(t)
			old := reach(t, a, tc.from)
			if tc.release {
				old = mustStep(t, a, old, authority.Release)
			}
			a.Advance(tc.advance)
			for _, req := range []authority.ReserveRequest{request("RMDD-27", "bob", "r2"), otherTenant(request("RMDD-27", "carol", "r3"))} {
				_, err := a.Reserve(ctx, req)
				wantCode(t, "reserve of a "+string(old.State)+" claim", err, errs.CodeConflict)
			}
			if got := mustGet(t, a, "RMDD-27", "tenant-a"); !reflect.DeepEqual(got, old) {
				t.Fatalf("refused reclaim changed the record: %+v", got)
			}
		})
	}
	t.Run("by-another-tenant", func(t *testing.T) {
		a := fixture(t)
		old := reach(t, a, released)
		keep := mustReserve(t, a, request("RMDD-28", "alice", "r9"))
		res, err := a.Reserve(ctx, otherTenant(request("RMDD-27", "carol", "r3")))
		if err != nil || !res.Reclaimed || res.Record.TenantRef != "tenant-b" || !follows(res.Record, old) {
			t.Fatalf("reclaim by tenant-b: %+v %v", res, err)
		}
		listA, err := a.List(ctx, authority.ListRequest{TenantRef: "tenant-a"})
		if err != nil || len(listA.Records) != 1 || listA.Records[0].ConceptID != keep.ConceptID {
			t.Fatalf("tenant-a's list after the reclaim: %+v %v", listA, err)
		}
		listB, err := a.List(ctx, authority.ListRequest{TenantRef: "tenant-b"})
		if err != nil || len(listB.Records) != 1 || !reflect.DeepEqual(listB.Records[0], res.Record) {
			t.Fatalf("tenant-b's list after the reclaim: %+v %v", listB, err)
		}
		_, err = a.Get(ctx, "RMDD-27", "tenant-a")
		wantCode(t, "old tenant's get", err, errs.CodeNotFound)
		_, err = a.Transition(ctx, holder(old, authority.Materialize, old.Fence))
		wantCode(t, "old tenant's transition", err, errs.CodeNotFound)
		// And back again, after tenant-b releases it.
		rel := mustStep(t, a, res.Record, authority.Release)
		back := mustReserve(t, a, request("RMDD-27", "alice", "r4"))
		if back.TenantRef != "tenant-a" || !follows(back, rel) {
			t.Fatalf("reclaim back by tenant-a: %+v", back)
		}
		listB, err = a.List(ctx, authority.ListRequest{TenantRef: "tenant-b"})
		if err != nil || len(listB.Records) != 0 {
			t.Fatalf("tenant-b's list after losing the claim: %+v %v", listB, err)
		}
	})
}

func otherTenant(req authority.ReserveRequest) authority.ReserveRequest {
	req.TenantRef = "tenant-b"
	return req
}

// publicKeys are the only fields a conflict may show.
var publicKeys = []string{"concept_id", "namespace", "policy_version", "state", "visibility", "fence", "created_at_ms", "expires_at_ms"}

// A conflict names the winner by its public fields only.
func TestConflictDetailHoldsOnlyPublicFields(t *testing.T) {
	ctx := context.Background()
	secret := authority.ReserveRequest{
		ConceptID: "RMDD-27", TenantRef: "SECRET-TENANT", OwnerRef: "SECRET-OWNER", RequestRef: "SECRET-REQUEST",
		RepositoryRef: "SECRET-REPO", LaneRef: "SECRET-LANE", DesignRef: "SECRET-DESIGN",
		ProvenanceRefs: []string{"SECRET-PROV-1", "SECRET-PROV-2"}, PurposeDigest: "SECRET-PURPOSE", TTLMs: ttl.Milliseconds(),
	}
	for _, s := range []authority.State{reserved, materialized, landed, tombstoned} {
		t.Run(string(s), func(t *testing.T) {
			a := fixture(t)
			rec := mustReserve(t, a, secret)
			for _, act := range map[authority.State][]authority.Action{materialized: {"materialize"}, landed: {"materialize", "land"}, tombstoned: {"materialize", "land", "tombstone"}}[s] {
				rec = mustStep(t, a, rec, act)
			}
			same := secret
			same.PurposeDigest = "other-purpose" // the same request key, another fingerprint
			for _, req := range []authority.ReserveRequest{request("RMDD-27", "bob", "r2"), otherTenant(request("RMDD-27", "bob", "r2")), same} {
				_, err := a.Reserve(ctx, req)
				wantCode(t, "conflicting reserve", err, errs.CodeConflict)
				e := errs.From(err)
				keys := make([]string, 0, len(e.Detail))
				for k := range e.Detail {
					keys = append(keys, k)
					if !contains(publicKeys, k) {
						t.Errorf("conflict detail has the private field %q: %v", k, e.Detail)
					}
				}
				if len(keys) != len(publicKeys) {
					t.Errorf("conflict detail keys %v, want %v", keys, publicKeys)
				}
				want := map[string]any{"concept_id": "RMDD-27", "namespace": "RMDD", "policy_version": "2", "state": string(s),
					"visibility": string(rec.Visibility), "fence": rec.Fence, "created_at_ms": rec.CreatedAtMs, "expires_at_ms": rec.ExpiresAtMs}
				for k, v := range want {
					if fmt.Sprint(e.Detail[k]) != fmt.Sprint(v) {
						t.Errorf("conflict detail %s = %v, want %v", k, e.Detail[k], v)
					}
				}
				all := err.Error() + fmt.Sprint(e.Detail)
				for _, leak := range []string{"SECRET", rec.ReservationID, rec.Fingerprint} {
					if strings.Contains(all, leak) {
						t.Errorf("conflict reveals %q: %s", leak, all)
					}
				}
			}
		})
	}
}

func TestReserveNextNumeric(t *testing.T) {
	ctx := context.Background()
	next := func(from, to uint64, req authority.ReserveRequest) authority.ReserveNextRequest {
		req.ConceptID = ""
		return authority.ReserveNextRequest{Namespace: "RMDD", From: from, To: to, Request: req}
	}
	t.Run("skips-held-and-replays", func(t *testing.T) {
		a := fixture(t)
		mustReserve(t, a, request("RMDD-1", "bob", "b1"))
		mustReserve(t, a, otherTenant(request("RMDD-2", "carol", "c1")))
		reach3 := mustReserve(t, a, request("RMDD-3", "bob", "b3"))
		reach3 = mustStep(t, a, reach3, authority.Materialize)
		mustStep(t, a, reach3, authority.Land)
		res, err := a.ReserveNextNumeric(ctx, next(1, 10, request("", "alice", "a1")))
		if err != nil || !res.Created || res.Record.ConceptID != "RMDD-4" || res.Record.OwnerRef != "alice" {
			t.Fatalf("reserve-next: %+v %v", res, err)
		}
		again, err := a.ReserveNextNumeric(ctx, next(1, 10, request("", "alice", "a1")))
		if err != nil || !again.Replayed || !reflect.DeepEqual(again.Record, res.Record) {
			t.Fatalf("reserve-next retry: %+v %v, want a replay of RMDD-4", again, err)
		}
		// Another request goes on to the next number.
		other, err := a.ReserveNextNumeric(ctx, next(1, 10, request("", "alice", "a2")))
		if err != nil || !other.Created || other.Record.ConceptID != "RMDD-5" {
			t.Fatalf("reserve-next by another request: %+v %v", other, err)
		}
		// A released pre-visibility candidate is reclaimed in order.
		one := mustGet(t, a, "RMDD-1", "tenant-a")
		gone := mustStep(t, a, one, authority.Release)
		re, err := a.ReserveNextNumeric(ctx, next(1, 10, request("", "alice", "a3")))
		if err != nil || !re.Reclaimed || re.Record.ConceptID != "RMDD-1" || !follows(re.Record, gone) {
			t.Fatalf("reserve-next over a released candidate: %+v %v", re, err)
		}
	})
	t.Run("exhausted", func(t *testing.T) {
		a := fixture(t)
		for n := 1; n <= authority.MaxCandidates; n++ {
			mustReserve(t, a, request(fmt.Sprintf("RMDD-%d", n), "bob", fmt.Sprintf("b%d", n)))
		}
		_, err := a.ReserveNextNumeric(ctx, next(1, authority.MaxCandidates, request("", "alice", "a1")))
		wantCode(t, "reserve-next over 128 held candidates", err, errs.CodeExhausted)
		_, err = a.ReserveNextNumeric(ctx, next(1, authority.MaxCandidates+1, request("", "alice", "a1")))
		wantCode(t, "reserve-next over 129 candidates", err, errs.CodeInvalid)
		_, err = a.Get(ctx, fmt.Sprintf("RMDD-%d", authority.MaxCandidates+1), "")
		wantCode(t, "the 129th candidate", err, errs.CodeNotFound)
		res, err := a.ReserveNextNumeric(ctx, next(2, authority.MaxCandidates+1, request("", "alice", "a1")))
		if err != nil || res.Record.ConceptID != fmt.Sprintf("RMDD-%d", authority.MaxCandidates+1) {
			t.Fatalf("reserve-next over 2..129: %+v %v", res, err)
		}
	})
	t.Run("bad-requests", func(t *testing.T) {
		a := fixture(t)
		withID := next(1, 5, request("", "alice", "a1"))
		withID.Request.ConceptID = "RMDD-1"
		badNS := next(1, 5, request("", "alice", "a1"))
		badNS.Namespace = "rmdd"
		uncovered := next(1, 5, request("", "alice", "a1"))
		uncovered.Namespace = "NOPE"
		badReq := next(1, 5, request("", "alice", "a1"))
		badReq.Request.OwnerRef = ""
		for _, tc := range []struct {
			name string
			req  authority.ReserveNextRequest
		}{
			{"concept id given", withID},
			{"from zero", next(0, 5, request("", "alice", "a1"))},
			{"to below from", next(5, 4, request("", "alice", "a1"))},
			{"129 candidates", next(1, 129, request("", "alice", "a1"))},
			{"huge range", next(1, 1<<63, request("", "alice", "a1"))},
			{"bad namespace", badNS},
			{"no policy", uncovered},
			{"bad request", badReq},
		} {
			_, err := a.ReserveNextNumeric(ctx, tc.req)
			wantCode(t, tc.name, err, errs.CodeInvalid)
		}
		for n := 1; n <= 5; n++ {
			if _, err := a.Get(ctx, fmt.Sprintf("RMDD-%d", n), ""); !errsIs(err, errs.CodeNotFound) {
				t.Fatalf("a refused reserve-next left RMDD-%d: %v", n, err)
			}
		}
	})
	t.Run("service", func(t *testing.T) {
		local, err := fsmtest.New(nodes.Module())
		if err != nil {
			t.Fatal(err)
		}
		svc := authority.NewService(local, local, policies(t))
		mustReserve(t, svc, request("RMDD-7", "bob", "b1"))
		res, err := svc.ReserveNextNumeric(ctx, next(7, 8, request("", "alice", "a1")))
		if err != nil || !res.Created || res.Record.ConceptID != "RMDD-8" {
			t.Fatalf("service reserve-next: %+v %v", res, err)
		}
		_, err = svc.ReserveNextNumeric(ctx, next(7, 8, request("", "carol", "c1")))
		wantCode(t, "service reserve-next, all held", err, errs.CodeExhausted)
	})
}

func errsIs(err error, code errs.Code) bool { return errs.CodeOf(err) == code }

// A bad request is refused before anything is proposed.
func TestBadRequestsCreateNothing(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("x", 513)
	refs := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("prov-%d", i)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		edit func(r *authority.ReserveRequest)
	}{
		{"empty tenant", func(r *authority.ReserveRequest) { r.TenantRef = "" }},
		{"empty owner", func(r *authority.ReserveRequest) { r.OwnerRef = "" }},
		{"empty request", func(r *authority.ReserveRequest) { r.RequestRef = "" }},
		{"empty purpose", func(r *authority.ReserveRequest) { r.PurposeDigest = "" }},
		{"oversized tenant", func(r *authority.ReserveRequest) { r.TenantRef = long }},
		{"oversized owner", func(r *authority.ReserveRequest) { r.OwnerRef = long }},
		{"oversized request", func(r *authority.ReserveRequest) { r.RequestRef = long }},
		{"oversized repository", func(r *authority.ReserveRequest) { r.RepositoryRef = long }},
		{"oversized lane", func(r *authority.ReserveRequest) { r.LaneRef = long }},
		{"oversized design", func(r *authority.ReserveRequest) { r.DesignRef = long }},
		{"oversized purpose", func(r *authority.ReserveRequest) { r.PurposeDigest = long }},
		{"oversized provenance", func(r *authority.ReserveRequest) { r.ProvenanceRefs = []string{long} }},
		{"NUL in tenant", func(r *authority.ReserveRequest) { r.TenantRef = "a\x00b" }},
		{"newline in owner", func(r *authority.ReserveRequest) { r.OwnerRef = "a\nb" }},
		{"DEL in request", func(r *authority.ReserveRequest) { r.RequestRef = "a\x7fb" }},
		{"C1 control in design", func(r *authority.ReserveRequest) { r.DesignRef = "a\u0085b" }},
		{"escape in lane", func(r *authority.ReserveRequest) { r.LaneRef = "\x1b[31m" }},
		{"invalid UTF-8 in repository", func(r *authority.ReserveRequest) { r.RepositoryRef = "a\xffb" }},
		{"empty provenance ref", func(r *authority.ReserveRequest) { r.ProvenanceRefs = []string{"p1", ""} }},
		{"control in provenance ref", func(r *authority.ReserveRequest) { r.ProvenanceRefs = []string{"p\t1"} }},
		{"65 provenance refs", func(r *authority.ReserveRequest) { r.ProvenanceRefs = refs(authority.MaxProvenanceRefs + 1) }},
		{"negative ttl", func(r *authority.ReserveRequest) { r.TTLMs = -1 }},
		{"ttl below the minimum", func(r *authority.ReserveRequest) { r.TTLMs = authority.MinTTL.Milliseconds() - 1 }},
		{"ttl above the maximum", func(r *authority.ReserveRequest) { r.TTLMs = authority.MaxTTL.Milliseconds() + 1 }},
		{"uncovered id", func(r *authority.ReserveRequest) { r.ConceptID = "RMDD-2000" }},
		{"unknown namespace", func(r *authority.ReserveRequest) { r.ConceptID = "NOPE-27" }},
		{"bad id", func(r *authority.ReserveRequest) { r.ConceptID = "rmdd-27" }},
		{"leading zero", func(r *authority.ReserveRequest) { r.ConceptID = "RMDD-027" }},
		{"empty id", func(r *authority.ReserveRequest) { r.ConceptID = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := fixture(t)
			req := request("RMDD-27", "alice", "r1")
			tc.edit(&req)
			_, err := a.Reserve(ctx, req)
			wantCode(t, tc.name, err, errs.CodeInvalid)
			for _, id := range []string{"RMDD-27", "RMDD-2000", "NOPE-27"} {
				if _, err := a.Get(ctx, id, ""); !errsIs(err, errs.CodeNotFound) {
					t.Fatalf("after a refused reserve, get %s: %v", id, err)
				}
			}
			page, err := a.List(ctx, authority.ListRequest{TenantRef: "tenant-a"})
			if err != nil || len(page.Records) != 0 {
				t.Fatalf("after a refused reserve, list: %+v %v", page, err)
			}
		})
	}
	// The bounds themselves are accepted.
	a := fixture(t)
	for i, edit := range []func(r *authority.ReserveRequest){
		func(r *authority.ReserveRequest) { r.ProvenanceRefs = refs(authority.MaxProvenanceRefs) },
		func(r *authority.ReserveRequest) { r.TTLMs = authority.MinTTL.Milliseconds() },
		func(r *authority.ReserveRequest) { r.TTLMs = authority.MaxTTL.Milliseconds() },
		func(r *authority.ReserveRequest) { r.TTLMs = 0 }, // the default
		func(r *authority.ReserveRequest) { r.OwnerRef = strings.Repeat("o", 512) },
		func(r *authority.ReserveRequest) { r.RepositoryRef, r.LaneRef, r.DesignRef = "", "", "" },
	} {
		req := request(fmt.Sprintf("RMDD-%d", i+1), "alice", fmt.Sprintf("ok-%d", i))
		edit(&req)
		rec := mustReserve(t, a, req)
		if req.TTLMs == 0 && rec.ExpiresAtMs != rec.CreatedAtMs+authority.DefaultTTL.Milliseconds() {
			t.Errorf("default ttl: expires %d, created %d", rec.ExpiresAtMs, rec.CreatedAtMs)
		}
		if len(rec.ProvenanceRefs) != len(req.ProvenanceRefs) {
			t.Errorf("provenance refs: %d stored, %d sent", len(rec.ProvenanceRefs), len(req.ProvenanceRefs))
		}
	}

	// Bad transitions and reads are refused too.
	rec := mustReserve(t, a, request("RMDD-27", "alice", "r1"))
	for _, tc := range []struct {
		name string
		edit func(r *authority.TransitionRequest)
	}{
		{"fence zero", func(r *authority.TransitionRequest) { r.ExpectedFence = 0 }},
		{"unknown action", func(r *authority.TransitionRequest) { r.Action = "delete" }},
		{"empty action", func(r *authority.TransitionRequest) { r.Action = "" }},
		{"empty tenant", func(r *authority.TransitionRequest) { r.TenantRef = "" }},
		{"empty owner", func(r *authority.TransitionRequest) { r.OwnerRef = "" }},
		{"empty reservation", func(r *authority.TransitionRequest) { r.ReservationID = "" }},
		{"empty fingerprint", func(r *authority.TransitionRequest) { r.Fingerprint = "" }},
		{"control in owner", func(r *authority.TransitionRequest) { r.OwnerRef = "alice\x00" }},
		{"bad id", func(r *authority.TransitionRequest) { r.ConceptID = "RMDD-27x" }},
	} {
		req := holder(rec, authority.Materialize, rec.Fence)
		tc.edit(&req)
		_, err := a.Transition(ctx, req)
		wantCode(t, "transition with "+tc.name, err, errs.CodeInvalid)
	}
	if got := mustGet(t, a, "RMDD-27", "tenant-a"); !reflect.DeepEqual(got, rec) {
		t.Fatalf("refused transitions changed the record: %+v", got)
	}
	_, err := a.Get(ctx, "RMDD-027", "")
	wantCode(t, "get of a bad id", err, errs.CodeInvalid)
	_, err = a.Get(ctx, "RMDD-27", "tenant\n")
	wantCode(t, "get with a bad tenant", err, errs.CodeInvalid)
	for _, lr := range []authority.ListRequest{{TenantRef: ""}, {TenantRef: "t", Limit: -1}, {TenantRef: "t", Limit: 129}, {TenantRef: "t", After: "a\x00"}} {
		_, err := a.List(ctx, lr)
		wantCode(t, fmt.Sprintf("list %+v", lr), err, errs.CodeInvalid)
	}
}

func TestFixtureIsNotAuthoritative(t *testing.T) {
	if fixture(t).Authoritative() {
		t.Fatal("the fixture claims to be authoritative")
	}
	local, err := fsmtest.New(nodes.Module())
	if err != nil {
		t.Fatal(err)
	}
	if !authority.NewService(local, local, policies(t)).Authoritative() {
		t.Fatal("the native adapter is not authoritative")
	}
}
