package authority_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/nodes"
	"pgregory.net/rapid"
)

// The reference model of the reservation protocol: what every call must
// answer, from the spec's rules alone.

// Small pools make collisions frequent. Requests 0 and 1 share a request
// ref but ask for different purposes (another fingerprint); request 3 is
// another tenant.
var (
	modelIDs  = []string{"RMDD-1", "RMDD-2", "GOC-3"}
	modelReqs = []authority.ReserveRequest{
		{TenantRef: "tenant-a", OwnerRef: "o1", RequestRef: "r1", PurposeDigest: "p1"},
		{TenantRef: "tenant-a", OwnerRef: "o1", RequestRef: "r1", PurposeDigest: "p2"},
		{TenantRef: "tenant-a", OwnerRef: "o2", RequestRef: "r2", PurposeDigest: "p1"},
		{TenantRef: "tenant-b", OwnerRef: "o3", RequestRef: "r3", PurposeDigest: "p1"},
	}
	modelTTLs     = []int64{1000, 3000, 60000}
	modelAdvances = []time.Duration{time.Millisecond, 999 * time.Millisecond, time.Second, 2500 * time.Millisecond}
)

// outcome classes of a call.
const (
	created    = "created"
	reclaimed  = "reclaimed"
	replayed   = "replayed"
	moved      = "moved" // a fresh transition
	conflict   = "conflict"
	staleFence = "stale_fence"
	expiredErr = "expired"
	notFound   = "not_found"
	invalid    = "invalid"
)

type reservation struct {
	id     string // reservation id, learned from the authority
	fp     string
	holder int // index into modelReqs
}

type modelClaim struct {
	reservation
	state authority.State
	// fence is the claim's current fence and prevFence the one its last
	// write replaced (0 after a create). Fences are log indexes, which the
	// model cannot predict; it learns each from the record (fresh) and
	// requires it above every fence issued before.
	fence, prevFence uint64
	fences           []uint64 // every fence this id has had, oldest first
	visibility       authority.Visibility
	expiresAt        int64
	past             []reservation // earlier reservations of this id
}

func (c *modelClaim) reclaimable(now int64) bool {
	if c.visibility != visNone {
		return false
	}
	switch c.state {
	case released, expired:
		return true
	case reserved, materialized:
		return now >= c.expiresAt
	}
	return false
}

// outcomesOf are the states an action may end in: a retry by the holder
// with the fence just before the current one, of an action that ends in
// the current state, is a replay.
var outcomesOf = map[authority.Action][]authority.State{
	authority.Materialize: {materialized}, authority.Land: {landed}, authority.Tombstone: {tombstoned},
	authority.Release: {released, tombstoned}, authority.Expire: {expired, tombstoned},
}

// step is the spec's state machine: the next state and visibility, or
// the error class.
func (c *modelClaim) step(action authority.Action, now int64) (authority.State, authority.Visibility, string) {
	due := now >= c.expiresAt
	switch {
	case c.state == reserved && action == authority.Materialize, c.state == materialized && action == authority.Land:
		if due {
			return "", "", expiredErr
		}
		if action == authority.Land {
			return landed, visRepo, ""
		}
		return materialized, c.visibility, ""
	case (c.state == reserved || c.state == materialized) && action == authority.Release:
		return released, c.visibility, ""
	case (c.state == reserved || c.state == materialized) && action == authority.Expire:
		if !due {
			return "", "", conflict
		}
		return expired, c.visibility, ""
	case c.state == landed && (action == authority.Tombstone || action == authority.Release):
		return tombstoned, visExternal, ""
	case c.state == landed && action == authority.Expire:
		// Promoted to a tombstone, but only once the deadline has passed.
		if !due {
			return "", "", conflict
		}
		return tombstoned, visExternal, ""
	}
	return "", "", conflict
}

type lifecycleMachine struct {
	a      *authority.Service
	l      *fsmtest.Local
	now    int64
	claims map[string]*modelClaim
	// topFence is the highest fence issued on any id: while fences are
	// log indexes, a new one is above every earlier one.
	topFence uint64
	// counted is true while the enabled set has version 1 of the node
	// commands (an upgrade part-way): fences count up by one per id.
	counted bool
	// fps is the fingerprint each request had on each id.
	fps map[string]string
}

func classOf(err error) string {
	if err == nil {
		return ""
	}
	return string(errs.CodeOf(err))
}

func reserveClass(res *authority.ReserveResult) string {
	switch {
	case res.Created && !res.Reclaimed && !res.Replayed:
		return created
	case res.Reclaimed && !res.Created && !res.Replayed:
		return reclaimed
	case res.Replayed && !res.Created && !res.Reclaimed:
		return replayed
	}
	return fmt.Sprintf("bad result flags %+v", *res)
}

func (m *lifecycleMachine) reqFor(id string, holder int, ttl int64) authority.ReserveRequest {
	r := modelReqs[holder]
	r.ConceptID, r.TTLMs = id, ttl
	return r
}

// predictReserve is the class a reserve of id by holder gets now.
func (m *lifecycleMachine) predictReserve(id string, holder int) string {
	c := m.claims[id]
	switch {
	case c == nil:
		return created
	case c.holder == holder:
		return replayed
	case c.reclaimable(m.now):
		return reclaimed
	}
	return conflict
}

// checkRecord compares a record with the model's claim.
func (m *lifecycleMachine) checkRecord(t *rapid.T, what string, rec *authority.Record, c *modelClaim) {
	t.Helper()
	want := modelReqs[c.holder]
	if rec.State != c.state || rec.Fence != c.fence || rec.PrevFence != c.prevFence || rec.Visibility != c.visibility || rec.ExpiresAtMs != c.expiresAt ||
		rec.ReservationID != c.id || rec.Fingerprint != c.fp || rec.TenantRef != want.TenantRef || rec.OwnerRef != want.OwnerRef ||
		rec.RequestRef != want.RequestRef || rec.PurposeDigest != want.PurposeDigest {
		t.Fatalf("%s: record %s %s fence %d %s expires %d rsv %s owner %s/%s/%s, model %s fence %d %s expires %d rsv %s holder %d",
			what, rec.ConceptID, rec.State, rec.Fence, rec.Visibility, rec.ExpiresAtMs, rec.ReservationID, rec.TenantRef, rec.OwnerRef, rec.RequestRef,
			c.state, c.fence, c.visibility, c.expiresAt, c.id, c.holder)
	}
}

// claim records a created or reclaimed reservation in the model.
func (m *lifecycleMachine) claim(t *rapid.T, id string, holder int, ttl int64, rec *authority.Record) {
	t.Helper()
	c := m.claims[id]
	if c == nil {
		c = &modelClaim{}
		m.claims[id] = c
	} else {
		c.past = append(c.past, c.reservation)
	}
	for _, p := range c.past {
		if p.id == rec.ReservationID {
			t.Fatalf("%s: new claim reuses the reservation id %s", id, rec.ReservationID)
		}
	}
	key := fmt.Sprint(id, "/", holder)
	if fp, ok := m.fps[key]; ok && fp != rec.Fingerprint {
		t.Fatalf("%s: request %d got fingerprint %s, earlier %s", id, holder, rec.Fingerprint, fp)
	}
	for k, fp := range m.fps {
		if k != key && fp == rec.Fingerprint {
			t.Fatalf("%s: request %d has the fingerprint of %s", id, holder, k)
		}
	}
	m.fps[key] = rec.Fingerprint
	c.reservation = reservation{id: rec.ReservationID, fp: rec.Fingerprint, holder: holder}
	c.state, c.visibility, c.expiresAt = reserved, visNone, m.now+ttl
	m.fresh(t, id, c, rec.Fence)
}

// fresh moves c to the fence a write gave it: the fence before plus one
// while fences are counted, else above every fence issued before.
func (m *lifecycleMachine) fresh(t *rapid.T, id string, c *modelClaim, fence uint64) {
	t.Helper()
	switch {
	case m.counted && fence != c.fence+1:
		t.Fatalf("%s: a counted write issued fence %d after %d", id, fence, c.fence)
	case !m.counted && fence <= m.topFence:
		t.Fatalf("%s: a write issued fence %d, not above the %d issued before", id, fence, m.topFence)
	}
	m.topFence = max(m.topFence, fence)
	c.prevFence, c.fence = c.fence, fence
	c.fences = append(c.fences, fence)
}

func (m *lifecycleMachine) Reserve(t *rapid.T) {
	id := rapid.SampledFrom(modelIDs).Draw(t, "id")
	holder := rapid.IntRange(0, len(modelReqs)-1).Draw(t, "holder")
	ttl := rapid.SampledFrom(modelTTLs).Draw(t, "ttl")
	want := m.predictReserve(id, holder)
	res, err := m.a.Reserve(context.Background(), m.reqFor(id, holder, ttl))
	got := classOf(err)
	if err == nil {
		got = reserveClass(res)
	}
	if got != want {
		t.Fatalf("reserve %s by request %d: %s (%v), model says %s", id, holder, got, err, want)
	}
	c := m.claims[id]
	switch want {
	case created, reclaimed:
		m.claim(t, id, holder, ttl, res.Record)
		m.checkRecord(t, "reserve", res.Record, m.claims[id])
	case replayed:
		m.checkRecord(t, "replayed reserve", res.Record, c)
	case conflict:
		d := errs.From(err).Detail
		if fmt.Sprint(d["state"]) != string(c.state) || fmt.Sprint(d["fence"]) != fmt.Sprint(c.fence) || d["owner_ref"] != nil || d["tenant_ref"] != nil {
			t.Fatalf("conflict detail %v, model %s fence %d", d, c.state, c.fence)
		}
	}
}

// Step is a holder's fresh transition: its current reservation and fence.
// It picks among the actions the state machine has for the claim's state,
// so that long lifecycles are common.
func (m *lifecycleMachine) Step(t *rapid.T) {
	var ids []string
	for _, id := range modelIDs {
		if c := m.claims[id]; c != nil && len(lifecycleActions[c.state]) > 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		t.Skip("no claim to move")
	}
	id := rapid.SampledFrom(ids).Draw(t, "id")
	c := m.claims[id]
	action := rapid.SampledFrom(lifecycleActions[c.state]).Draw(t, "action")
	m.transition(t, id, action, c.reservation, c.holder, int64(c.fence))
}

// lifecycleActions are the actions the spec's diagram has from a state.
var lifecycleActions = map[authority.State][]authority.Action{
	reserved:     {authority.Materialize, authority.Release, authority.Expire},
	materialized: {authority.Land, authority.Release, authority.Expire},
	landed:       {authority.Tombstone, authority.Release, authority.Expire},
}

// Transition is any call: a reservation of the id, current or earlier,
// presented as its holder or as another request, with the current fence,
// one the id had before, one next to the current one, or none.
func (m *lifecycleMachine) Transition(t *rapid.T) {
	id := rapid.SampledFrom(modelIDs).Draw(t, "id")
	action := rapid.SampledFrom(allActions).Draw(t, "action")
	c := m.claims[id]
	rsv := reservation{id: "rsv-none", fp: "v1:none", holder: 0}
	fence := rapid.Int64Range(-1, 1).Draw(t, "fence")
	if c != nil {
		pick := rapid.IntRange(0, len(c.past)).Draw(t, "reservation")
		rsv = c.reservation
		if pick > 0 {
			rsv = c.past[pick-1]
		}
		near := []int64{0, int64(c.fence), int64(c.fence) - 1, int64(c.fence) + 1}
		for _, f := range c.fences {
			near = append(near, int64(f))
		}
		fence = rapid.SampledFrom(near).Draw(t, "fence near the claim's")
	}
	as := rsv.holder
	if rapid.Bool().Draw(t, "as another request") {
		as = rapid.IntRange(0, len(modelReqs)-1).Draw(t, "as")
	}
	m.transition(t, id, action, rsv, as, fence)
}

func (m *lifecycleMachine) transition(t *rapid.T, id string, action authority.Action, rsv reservation, as int, fence int64) {
	c := m.claims[id]
	who := modelReqs[as]
	req := authority.TransitionRequest{ConceptID: id, TenantRef: who.TenantRef, OwnerRef: who.OwnerRef,
		ReservationID: rsv.id, Fingerprint: rsv.fp, Action: action}
	if fence > 0 {
		req.ExpectedFence = uint64(fence)
	}

	want := moved
	var next authority.State
	var vis authority.Visibility
	holds := c != nil && who.TenantRef == modelReqs[c.holder].TenantRef && who.OwnerRef == modelReqs[c.holder].OwnerRef && rsv.id == c.id && rsv.fp == c.fp
	switch {
	case fence < 1:
		want = invalid
	case c == nil || who.TenantRef != modelReqs[c.holder].TenantRef:
		want = notFound
	case holds && uint64(fence) == c.prevFence && contains(outcomesOf[action], c.state):
		// A retry: the fence the last write replaced.
		want = replayed
	case !holds || uint64(fence) != c.fence:
		want = staleFence
	default:
		var class string
		next, vis, class = c.step(action, m.now)
		if class != "" {
			want = class
		}
	}
	res, err := m.a.Transition(context.Background(), req)
	got := classOf(err)
	if err == nil {
		got = moved
		if res.Replayed {
			got = replayed
		}
	}
	if got != want {
		state := "none"
		if c != nil {
			state = fmt.Sprintf("%s fence %d expires %d", c.state, c.fence, c.expiresAt)
		}
		t.Fatalf("%s %s with fence %d as request %d (holds %v) at %d, claim %s: %s (%v), model says %s",
			action, id, fence, as, holds, m.now, state, got, err, want)
	}
	if want == moved {
		if visRank(vis) < visRank(c.visibility) {
			t.Fatalf("model bug: visibility goes down")
		}
		c.state, c.visibility = next, vis
		m.fresh(t, id, c, res.Record.Fence)
	}
	if want == moved || want == replayed {
		m.checkRecord(t, string(action), res.Record, c)
	}
}

func (m *lifecycleMachine) Advance(t *rapid.T) {
	d := rapid.SampledFrom(modelAdvances).Draw(t, "advance")
	m.l.Advance(d)
	m.now += d.Milliseconds()
}

func (m *lifecycleMachine) Get(t *rapid.T) {
	id := rapid.SampledFrom(modelIDs).Draw(t, "id")
	as := rapid.IntRange(0, len(modelReqs)-1).Draw(t, "as")
	rec, err := m.a.Get(context.Background(), id, modelReqs[as].TenantRef)
	c := m.claims[id]
	if c == nil || modelReqs[c.holder].TenantRef != modelReqs[as].TenantRef {
		if classOf(err) != notFound {
			t.Fatalf("get %s as %s: %+v %v, want not_found", id, modelReqs[as].TenantRef, rec, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	m.checkRecord(t, "get", rec, c)
}

// Race has several requests reserve one id at once. Whatever the claim's
// state, at most one of them makes a claim (created or reclaimed), the
// fence moves at most once, and every other one conflicts or, for the
// winner's own request, replays.
func (m *lifecycleMachine) Race(t *rapid.T) {
	id := rapid.SampledFrom(modelIDs).Draw(t, "id")
	c := m.claims[id]
	var pool []int
	for i := range modelReqs {
		// The current holder's own retry would replay the old claim or
		// conflict with the new one depending on timing; leave it out.
		if c == nil || i != c.holder {
			pool = append(pool, i)
		}
	}
	racers := rapid.SliceOfN(rapid.SampledFrom(pool), 2, 6).Draw(t, "racers")
	ttl := rapid.SampledFrom(modelTTLs).Draw(t, "ttl")
	want := m.predictReserve(id, racers[0]) // every racer would alone get the same class
	results := make([]*authority.ReserveResult, len(racers))
	errsOf := make([]error, len(racers))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, h := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errsOf[i] = m.a.Reserve(context.Background(), m.reqFor(id, h, ttl))
		}()
	}
	close(start)
	wg.Wait()

	winner := -1
	for i := range racers {
		if errsOf[i] != nil {
			continue
		}
		if cl := reserveClass(results[i]); cl == created || cl == reclaimed {
			if winner >= 0 {
				t.Fatalf("race on %s: racers %d and %d both claimed (%s)", id, winner, i, cl)
			}
			if cl != want {
				t.Fatalf("race on %s: a racer got %s, model says %s", id, cl, want)
			}
			winner = i
		}
	}
	if (want == created || want == reclaimed) != (winner >= 0) {
		t.Fatalf("race on %s: winner %d, model says %s", id, winner, want)
	}
	if winner >= 0 {
		m.claim(t, id, racers[winner], ttl, results[winner].Record)
		c = m.claims[id]
		m.checkRecord(t, "race winner", results[winner].Record, c)
	}
	for i, h := range racers {
		if i == winner {
			continue
		}
		if errsOf[i] != nil {
			if classOf(errsOf[i]) != conflict {
				t.Fatalf("race on %s: racer %d (request %d): %v, want a conflict", id, i, h, errsOf[i])
			}
			if winner >= 0 && h == racers[winner] {
				t.Fatalf("race on %s: racer %d has the winner's request and got %v, want a replay", id, i, errsOf[i])
			}
			continue
		}
		if cl := reserveClass(results[i]); cl != replayed || winner < 0 || h != racers[winner] {
			t.Fatalf("race on %s: racer %d (request %d) got %s, winner %d", id, i, h, cl, winner)
		}
		m.checkRecord(t, "race replay", results[i].Record, c)
	}
}

// Check compares every claim with the model after each action.
func (m *lifecycleMachine) Check(t *rapid.T) {
	for _, id := range modelIDs {
		rec, err := m.a.Get(context.Background(), id, "")
		c := m.claims[id]
		if c == nil {
			if classOf(err) != notFound {
				t.Fatalf("get %s: %+v %v, want not_found", id, rec, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		m.checkRecord(t, "check", rec, c)
	}
}

func TestLifecycleModel(t *testing.T) {
	ps := policies(t)
	rapid.Check(t, func(t *rapid.T) {
		l, err := fsmtest.New(nodes.Module())
		if err != nil {
			t.Fatal(err)
		}
		enable(t, l, nodes.IndexVersion)
		m := &lifecycleMachine{a: authority.NewService(l, l, ps), l: l, now: fsmtest.Epoch, claims: map[string]*modelClaim{}, fps: map[string]string{}}
		t.Repeat(rapid.StateMachineActions(m))
	})
}

// Upgrade enables the node commands at version 1 or 2, as a rolling
// upgrade (or a downgrade) does: fences switch between counted and log
// indexes, and must keep rising and answering retries either way.
func (m *lifecycleMachine) Upgrade(t *rapid.T) {
	v := rapid.SampledFrom([]uint16{1, nodes.IndexVersion}).Draw(t, "node command version")
	enable(t, m.l, v)
	m.counted = v == 1
}

// TestConcurrentReclaimHasOneWinner runs the race of the spec's evidence
// (many adapter instances contending through one native port) on a
// released and on an expired claim.
func TestConcurrentReclaimHasOneWinner(t *testing.T) {
	for _, how := range []authority.State{released, expired} {
		t.Run(string(how), func(t *testing.T) {
			ctx := context.Background()
			a := fixture(t)
			old := reach(t, a, how)
			const n = 50
			results := make([]*authority.ReserveResult, n)
			errsOf := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					// Two adapters per request: one of each pair retries.
					results[i], errsOf[i] = a.Reserve(ctx, request("RMDD-27", fmt.Sprintf("owner-%d", i/2), fmt.Sprintf("req-%d", i/2)))
				}()
			}
			close(start)
			wg.Wait()
			winner := -1
			for i := 0; i < n; i++ {
				if errsOf[i] == nil && results[i].Reclaimed {
					if winner >= 0 {
						t.Fatalf("adapters %d and %d both reclaimed", winner, i)
					}
					winner = i
				}
			}
			if winner < 0 {
				t.Fatalf("no adapter reclaimed: %v", errsOf)
			}
			for i := 0; i < n; i++ {
				switch {
				case i == winner:
				case i/2 == winner/2:
					if errsOf[i] != nil || !results[i].Replayed || results[i].Record.ReservationID != results[winner].Record.ReservationID {
						t.Fatalf("the winner's twin %d: %+v %v, want a replay", i, results[i], errsOf[i])
					}
				default:
					if classOf(errsOf[i]) != conflict {
						t.Fatalf("adapter %d: %+v %v, want a conflict", i, results[i], errsOf[i])
					}
				}
			}
			rec := mustGet(t, a, "RMDD-27", "tenant-a")
			if rec.Fence <= old.Fence || rec.PrevFence != old.Fence || rec.ReservationID != results[winner].Record.ReservationID {
				t.Fatalf("after the race: fence %d (old %d), reservation %s, winner's %s", rec.Fence, old.Fence, rec.ReservationID, results[winner].Record.ReservationID)
			}
		})
	}
}
