package workitem_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// What the reservation machine draws from: few enough hosts, repositories
// and keys that reservations compete for them all the time.
var (
	rHosts      = []string{"h1", "h2", "h3"}
	rCapacities = []workitem.Dimensions{
		{CPUMillis: 4000, MemoryMiB: 8000, DiskMiB: 20000, Processes: 4},
		{CPUMillis: 8000, MemoryMiB: 8000, DiskMiB: 20000, Processes: 2},
		{CPUMillis: 1000, MemoryMiB: 1000, DiskMiB: 1000, Processes: 1},
	}
	rLabels   = []map[string]string{{"zone": "a"}, {"zone": "b"}, {}}
	rDiskFree = []int64{3000, 20000, 100000}
	rTTLs     = []int64{2000, 10_000, 60_000}
	rAdvances = []time.Duration{100 * time.Millisecond, time.Second, 5 * time.Second, 20 * time.Second, 40 * time.Second, 3 * time.Minute}
	rActors   = []identity.Principal{{}, {}, {}, member, member2}
	rModes    = []string{workitem.ModeEnabled, workitem.ModeEnabled, workitem.ModeEnabled, workitem.ModeDark, workitem.ModeShadow, ""}
	rExtPool  []*extension.Extension
	rExtRaw   [][]byte
)

// extPool seals the extensions items are admitted with.
func extPool(t fataler) {
	if rExtPool != nil {
		return
	}
	small := workitem.Dimensions{CPUMillis: 1000, MemoryMiB: 1000, DiskMiB: 1000, Processes: 1}
	mk := func(f func(e *extension.Extension)) {
		e := extension.Extension{Profile: extension.ProfileRef{Name: "p", Version: "v1"}, Dimensions: small,
			Concurrency: extension.Concurrency{Key: "c", Limit: 2}, Repository: "A", BaseRef: "main",
			Fairness: extension.Fairness{Group: "g", Cost: 100}, Disk: extension.DiskPolicy{MinFreeMiB: 10}}
		f(&e)
		sealedExt, raw, err := extension.Seal(e)
		if err != nil {
			t.Fatalf("seal: %v", err)
		}
		rExtPool, rExtRaw = append(rExtPool, sealedExt), append(rExtRaw, raw)
	}
	mk(func(*extension.Extension) {})
	mk(func(e *extension.Extension) { e.Exclusivity.Repository = true })
	mk(func(e *extension.Extension) { e.Branch, e.Exclusivity.Branch = "main", true })
	mk(func(e *extension.Extension) {
		e.AntiAffinity, e.HostLabels = []string{"x"}, map[string]string{"zone": "a"}
	})
	mk(func(e *extension.Extension) { e.Dimensions.CPUMillis, e.Repository, e.Concurrency.Key = 5000, "B", "d" })
	mk(func(e *extension.Extension) { e.Profile.Name, e.Repository, e.BaseRef = "p2", "B", "" })
	mk(func(e *extension.Extension) {
		e.Repository, e.Fairness.Cost, e.Disk.MinFreeMiB, e.AntiAffinity = "C", 400, 5000, []string{"x", "y"}
	})
	mk(func(e *extension.Extension) { e.Concurrency.Limit, e.Fairness.Group, e.Fairness.Cost = 1, "h", 0 })
	mk(func(e *extension.Extension) {
		e.Repository, e.BaseRef, e.AntiAffinity, e.Concurrency.Key = "D", "", []string{"x"}, "e"
	})
}

type resMachine struct {
	ctx   context.Context
	l     *fsmtest.Local
	svc   *workitem.Service
	m     *resModel
	items int
	seqs  map[string]uint64 // host -> last report_seq sent
}

func (mc *resMachine) check(t *rapid.T) {
	st := checkRes(t, mc.l.FSM)
	if bad := mc.m.compare(st); len(bad) > 0 {
		t.Fatalf("stored state differs from the model:\n  %s", strings.Join(bad, "\n  "))
	}
	// A concurrency key is never above the limit of any holder.
	count := map[string]int64{}
	for _, r := range mc.m.res {
		if r.Status == workitem.ReservationActive {
			count[r.Keys.Concurrency]++
		}
	}
	for _, r := range mc.m.res {
		if r.Status == workitem.ReservationActive {
			if e := mc.m.items[r.WorkItemID].ext; count[r.Keys.Concurrency] > e.Concurrency.Limit {
				t.Fatalf("concurrency key %s: %d active, %s's limit %d", r.Keys.Concurrency, count[r.Keys.Concurrency], r.WorkItemID, e.Concurrency.Limit)
			}
		}
	}
}

// want compares a call's outcome with the model's.
func want[R any](t *rapid.T, what string, got R, err error, werr *rErr, expect func(R) string) {
	t.Helper()
	if werr != nil {
		e := errs.From(err)
		if e == nil || e.Code != werr.code || (werr.reason != "" && reason(err) != werr.reason) {
			t.Fatalf("%s: %+v %v (detail %v), want %s", what, got, err, detailOf(err), werr)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v, want success", what, err)
	}
	if expect != nil {
		if d := expect(got); d != "" {
			t.Fatalf("%s (-model +got):\n%s", what, d)
		}
	}
}

func (mc *resMachine) putHost(t *rapid.T) {
	id := rapid.SampledFrom(rHosts).Draw(t, "host")
	r := workitem.PutHostRequest{HostID: id, Labels: rapid.SampledFrom(rLabels).Draw(t, "labels"), Capacity: rapid.SampledFrom(rCapacities).Draw(t, "capacity")}
	if rapid.IntRange(0, 3).Draw(t, "cas") == 3 {
		e := uint64(0)
		if h := mc.m.hosts[id]; h != nil && rapid.Bool().Draw(t, "right_epoch") {
			e = h.Epoch
		}
		r.ExpectedEpoch = &e
	}
	p := rapid.SampledFrom([]identity.Principal{{}, {}, fleet, ctl}).Draw(t, "principal")
	mc.m.apply()
	wantRes, werr := mc.m.putHost(p, r)
	got, err := mc.svc.PutHost(fsm.WithPrincipal(mc.ctx, p), r)
	want(t, fmt.Sprintf("put host %+v", r), got, err, werr, func(g *workitem.HostResult) string { return cmp.Diff(*wantRes, *g) })
}

func (mc *resMachine) telemetry(t *rapid.T) {
	id := rHosts[uniform(t, len(rHosts), "host")]
	seq := mc.seqs[id] + 1
	if rapid.IntRange(0, 5).Draw(t, "stale") == 5 && seq > 1 {
		seq--
	}
	mc.seqs[id] = max(mc.seqs[id], seq)
	r := workitem.TelemetryRequest{HostID: id, ReportSeq: seq, DiskFreeMiB: rapid.SampledFrom(rDiskFree).Draw(t, "free")}
	mc.m.apply()
	wantRes, werr := mc.m.telemetry(identity.Principal{}, r)
	got, err := mc.svc.ReportTelemetry(mc.ctx, r)
	if werr != nil && werr.code == errs.CodeNotFound {
		mc.seqs[id] = 0
	}
	want(t, fmt.Sprintf("telemetry %+v", r), got, err, werr, func(g *workitem.HostResult) string { return cmp.Diff(*wantRes, *g) })
}

func (mc *resMachine) profiles(t *rapid.T) {
	var ps []workitem.Profile
	for _, name := range []string{"p", "p2"} {
		if uniform(t, 10, "has_"+name) == 0 {
			continue
		}
		p := completeProfile(name, "v1")
		p.Fairness = workitem.FairnessPolicy{MaxDebt: 1000, DecayPerS: 5}
		p.TelemetryMaxAgeMs = 120_000
		p.Max = workitem.Dimensions{CPUMillis: 6000, MemoryMiB: 8000, DiskMiB: 8000, Processes: 4}
		p.Weights = rapid.SampledFrom([]workitem.Weights{{CPU: 1, Memory: 2, Disk: 1, Process: 1}, {CPU: 3, Memory: 1, Disk: 1, Process: 1000}}).Draw(t, "weights")
		p.Mode = workitem.ModeEnabled
		if k := uniform(t, 20, "mode"); k < len(rModes) {
			p.Mode = rModes[k]
		}
		switch uniform(t, 20, "incomplete") {
		case 0:
			p.Fairness.DecayPerS = 0
		case 1:
			p.Weights.CPU = 0
		case 2:
			p.TelemetryMaxAgeMs = 0
		}
		ps = append(ps, p)
	}
	p := rapid.SampledFrom([]identity.Principal{{}, {}, ops, fleet}).Draw(t, "principal")
	mc.m.apply()
	changed, werr := mc.m.setProfiles(p, ps)
	got, err := mc.svc.SetProfiles(fsm.WithPrincipal(mc.ctx, p), workitem.ProfilesRequest{Profiles: ps})
	want(t, "set profiles", got, err, werr, func(g *workitem.ProfilesResult) string {
		if g.Changed != changed {
			return fmt.Sprintf("changed %t, want %t", g.Changed, changed)
		}
		return ""
	})
}

func (mc *resMachine) submit(t *rapid.T) {
	mc.items++
	id := fmt.Sprintf("i%d", mc.items)
	r := req("k" + id)
	r.WorkItemID, r.MaxAttempts = id, rapid.Int64Range(1, 2).Draw(t, "attempts")
	var ext *extension.Extension
	if k := uniform(t, len(rExtPool)+1, "ext"); k < len(rExtPool) {
		ext = rExtPool[k]
		r.Metadata = []byte(`{"resource_reservation":` + string(rExtRaw[k]) + `}`)
	}
	mc.m.apply()
	mc.m.submit(id, ext, r.MaxAttempts)
	if _, err := mc.svc.Submit(mc.ctx, r); err != nil {
		t.Fatalf("submit %s: %v", id, err)
	}
}

// pick draws an item of the model (claimed ones more often).
func (mc *resMachine) pick(t *rapid.T, label string, ok func(*rItem) bool) *rItem {
	var list []string
	for _, id := range slices.Sorted(maps.Keys(mc.m.items)) {
		if ok(mc.m.items[id]) {
			list = append(list, id)
		}
	}
	if len(list) == 0 {
		return nil
	}
	return mc.m.items[list[uniform(t, len(list), label)]]
}

func (mc *resMachine) claim(t *rapid.T) {
	it := mc.pick(t, "item", func(it *rItem) bool {
		return it.status == workitem.StatusPending || it.status == workitem.StatusClaimed
	})
	if it == nil {
		return
	}
	p := rapid.SampledFrom(rActors[:4]).Draw(t, "principal")
	ttl := rapid.SampledFrom(rTTLs).Draw(t, "ttl")
	mc.m.apply()
	werr := mc.m.claim(p, it.id, ttl)
	got, err := mc.svc.Claim(fsm.WithPrincipal(mc.ctx, p), workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: it.id, TTLMs: ttl})
	want(t, "claim "+it.id, got, err, werr, nil)
}

// holder is the attempt and fence of it's claim, spoiled now and then.
func (mc *resMachine) holder(t *rapid.T, it *rItem) (int64, uint64) {
	a, f := max(it.attempt, 1), max(it.fence, 1)
	switch rapid.IntRange(0, 23).Draw(t, "spoil") { // rapid favours small draws: the rare cases are the large ones
	case 23:
		f++
	case 22:
		if f > 1 {
			f--
		}
	case 21:
		a++
	}
	return a, f
}

func (mc *resMachine) reserve(t *rapid.T) {
	it := mc.pick(t, "item", func(it *rItem) bool { return it.status == workitem.StatusClaimed && it.claimExpires > mc.m.now })
	if rapid.IntRange(0, 9).Draw(t, "any_item") == 9 {
		it = mc.pick(t, "any", func(it *rItem) bool { return it.attempt > 0 })
	}
	if it == nil {
		mc.claim(t) // nothing to reserve for yet
		return
	}
	a, f := mc.holder(t, it)
	r := workitem.ReserveRequest{TenantRef: "t", WorkItemID: it.id, Attempt: a, Fence: f}
	if rapid.IntRange(0, 2).Draw(t, "named") == 2 {
		r.HostID = rapid.SampledFrom(append(rHosts, "h9")).Draw(t, "host")
	}
	p := identity.Principal{}
	if rapid.IntRange(0, 9).Draw(t, "as_member") > 7 {
		p = rapid.SampledFrom(rActors[3:]).Draw(t, "principal")
	}
	mc.m.apply()
	wantRes, werr := mc.m.reserve(p, r)
	got, err := mc.svc.Reserve(fsm.WithPrincipal(mc.ctx, p), r)
	want(t, fmt.Sprintf("reserve %+v as %q", r, p.ID), got, err, werr, func(g *workitem.ReservationResult) string { return cmp.Diff(*wantRes, g.Reservation) })
	tally(werr)
}

func (mc *resMachine) release(t *rapid.T) {
	ids := slices.Sorted(maps.Keys(mc.m.res))
	if len(ids) == 0 {
		return
	}
	r := mc.m.res[rapid.SampledFrom(ids).Draw(t, "reservation")]
	rq := workitem.ReleaseRequest{TenantRef: "t", WorkItemID: r.WorkItemID, Attempt: r.Attempt, Fence: r.Fence, ReservationID: r.ReservationID}
	switch rapid.IntRange(0, 9).Draw(t, "spoil") {
	case 9:
		rq.Fence++
	case 8:
		rq.Attempt++
	case 7:
		rq.WorkItemID = "ghost"
	}
	p := rapid.SampledFrom(rActors).Draw(t, "principal")
	mc.m.apply()
	wantRes, werr := mc.m.release(p, rq)
	var snapshot workitem.Reservation
	if wantRes != nil {
		snapshot = *wantRes
	}
	got, err := mc.svc.Release(fsm.WithPrincipal(mc.ctx, p), rq)
	want(t, fmt.Sprintf("release %+v as %q", rq, p.ID), got, err, werr, func(g *workitem.ReservationResult) string { return cmp.Diff(snapshot, g.Reservation) })
}

func (mc *resMachine) complete(t *rapid.T) {
	it := mc.pick(t, "item", func(it *rItem) bool { return it.attempt > 0 })
	if it == nil {
		return
	}
	a, f := mc.holder(t, it)
	p := rapid.SampledFrom(rActors).Draw(t, "principal")
	mc.m.apply()
	werr := mc.m.complete(p, it.id, a, f)
	got, err := mc.svc.Complete(fsm.WithPrincipal(mc.ctx, p), workitem.CompleteRequest{TenantRef: "t", WorkItemID: it.id, Attempt: a, Fence: f, Outcome: workitem.StatusSucceeded})
	want(t, "complete "+it.id, got, err, werr, nil)
}

func (mc *resMachine) cancel(t *rapid.T) {
	it := mc.pick(t, "item", func(*rItem) bool { return true })
	if it == nil {
		return
	}
	mc.m.apply()
	werr := mc.m.cancel(it.id)
	got, err := mc.svc.Cancel(mc.ctx, workitem.CancelRequest{TenantRef: "t", WorkItemID: it.id, Reason: "r"})
	want(t, "cancel "+it.id, got, err, werr, nil)
}

func (mc *resMachine) reclaim(t *rapid.T) {
	rq := workitem.ReclaimRequest{MaxCount: rapid.IntRange(1, 3).Draw(t, "max")}
	if rapid.Bool().Draw(t, "tenant") {
		rq.TenantRef = "t"
	}
	if rapid.IntRange(0, 2).Draw(t, "by_host") == 2 {
		rq.HostID = rapid.SampledFrom(rHosts).Draw(t, "host")
	}
	p := rapid.SampledFrom([]identity.Principal{{}, member, fleet}).Draw(t, "principal")
	mc.m.apply()
	ids, more, werr := mc.m.reclaim(p, rq)
	got, err := mc.svc.Reclaim(fsm.WithPrincipal(mc.ctx, p), rq)
	want(t, fmt.Sprintf("reclaim %+v", rq), got, err, werr, func(g *workitem.ReclaimResult) string {
		if (g.NextCursor != "") != more {
			return fmt.Sprintf("next cursor %q, want one: %t", g.NextCursor, more)
		}
		return cmp.Diff(ids, g.ReclaimedIDs)
	})
}

func (mc *resMachine) advance(t *rapid.T) {
	d := rapid.SampledFrom(rAdvances).Draw(t, "advance")
	mc.m.clock += d.Milliseconds()
	mc.l.Advance(d)
}

func (mc *resMachine) tick(t *rapid.T) {
	budget := rapid.IntRange(1, 3).Draw(t, "budget")
	mc.m.apply()
	mc.m.tick(budget)
	res, err := mc.l.Propose(mc.ctx, log.Command{Type: fsm.CmdTick, Version: 1,
		Payload: log.MustMarshal(fsm.Tick{Budget: budget, FeedRetain: 1 << 30, IdemRetentionMs: 1 << 40})})
	if err != nil || res.Err != nil {
		t.Fatalf("tick: %v %v", err, res.Err)
	}
}

// query pages the native status (small pages) and compares it with the
// model: reservations in index order, hosts by id, debts decayed to now.
func (mc *resMachine) query(t *rapid.T) {
	var got workitem.QueryResult
	cursor := ""
	size := rapid.IntRange(1, 4).Draw(t, "page")
	for page := 0; ; page++ {
		q, err := mc.svc.Query(as(reader), workitem.QueryRequest{TenantRef: "t", MaxCount: size, Cursor: cursor}, fsm.Linearizable)
		if err != nil || page > 200 {
			t.Fatalf("query page %d: %v", page, err)
		}
		got.Reservations = append(got.Reservations, q.Reservations...)
		got.Hosts = append(got.Hosts, q.Hosts...)
		got.Fairness = append(got.Fairness, q.Fairness...)
		if cursor = q.NextCursor; cursor == "" {
			break
		}
	}
	var res []workitem.Reservation
	for _, r := range mc.m.res {
		res = append(res, *r)
	}
	sort.Slice(res, func(i, j int) bool { return res[i].Index < res[j].Index })
	var debts []string
	for _, k := range slices.SortedFunc(maps.Keys(mc.m.debts), func(a, b rDebtKey) int {
		return strings.Compare(a.profile+"\x00"+a.group, b.profile+"\x00"+b.group)
	}) {
		debts = append(debts, fmt.Sprintf("%s/%s:%d", k.profile, k.group, mc.m.debtAt(mc.m.debts[k])))
	}
	var gotDebts []string
	for _, d := range got.Fairness {
		gotDebts = append(gotDebts, fmt.Sprintf("%s/%s:%d", d.Profile, d.Group, d.DebtMilli))
	}
	var hosts []string
	for _, id := range slices.Sorted(maps.Keys(mc.m.hosts)) {
		hosts = append(hosts, id)
	}
	var gotHosts []string
	for _, h := range got.Hosts {
		gotHosts = append(gotHosts, h.HostID)
	}
	if d := cmp.Diff(res, got.Reservations, cmp.Transformer("keys", func(k workitem.Keys) workitem.Keys { k.AntiAffinity = nonNil(k.AntiAffinity); return k })); len(res)+len(got.Reservations) > 0 && d != "" {
		t.Fatalf("query reservations (-model +got):\n%s", d)
	}
	if !slices.Equal(debts, gotDebts) || !slices.Equal(hosts, gotHosts) {
		t.Fatalf("query: debts %v hosts %v; the model's %v %v", gotDebts, gotHosts, debts, hosts)
	}
}

// snapshot restores the FSM from its own snapshot.
func (mc *resMachine) snapshot(t *rapid.T) {
	var buf bytes.Buffer
	if err := mc.l.FSM.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	first := bytes.Clone(buf.Bytes())
	index, hash, err := mc.l.FSM.StateHash()
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.l.FSM.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if i, h, err := mc.l.FSM.StateHash(); err != nil || i != index || h != hash {
		t.Fatalf("restored state %d %x, was %d %x (%v)", i, h, index, hash, err)
	}
	var again bytes.Buffer
	if err := mc.l.FSM.WriteSnapshot(&again); err != nil || !bytes.Equal(first, again.Bytes()) {
		t.Fatalf("the restored FSM writes other snapshot bytes (%v)", err)
	}
}

// TestReservationModel drives hosts, telemetry, profiles and their
// modes, submits with and without the extension, claims, reserves,
// releases, completions, cancels, claim expiry (Tick), reclaim, reads
// and snapshot/restore over a bare FSM, with the model alongside: every
// decision and, after every step, the stored tables must be the model's
// and keep every invariant (no host over capacity, one exclusive holder,
// no reservation outliving its claim, concurrency within limits).
func TestReservationModel(t *testing.T) {
	extPool(t)
	defer func() { t.Logf("reserve outcomes: %v", tallies) }()
	rapid.Check(t, func(t *rapid.T) {
		l, err := fsmtest.New(workitem.Module())
		if err != nil {
			t.Fatal(err)
		}
		enable(t, l)
		mc := &resMachine{ctx: context.Background(), l: l, svc: workitem.NewService(l, l), m: newResModel(fsmtest.Epoch), seqs: map[string]uint64{}}
		mc.m.apply() // the enable command
		actions := map[string]func(*rapid.T){
			"host": mc.putHost, "telemetry": mc.telemetry, "profiles": mc.profiles, "submit": mc.submit, "claim": mc.claim,
			"reserve": mc.reserve, "release": mc.release, "complete": mc.complete, "cancel": mc.cancel, "reclaim": mc.reclaim,
			"advance": mc.advance, "tick": mc.tick, "query": mc.query, "snapshot": mc.snapshot,
		}
		weights := map[string]int{"host": 1, "telemetry": 4, "profiles": 1, "submit": 5, "claim": 6, "reserve": 12, "release": 2,
			"complete": 2, "cancel": 1, "reclaim": 1, "advance": 2, "tick": 2, "query": 1, "snapshot": 1}
		var names []string
		for name := range actions {
			for range weights[name] {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		mc.m.apply()
		boot := []workitem.Profile{completeProfile("p", "v1"), completeProfile("p2", "v1")}
		for i := range boot {
			boot[i].Fairness = workitem.FairnessPolicy{MaxDebt: 1000, DecayPerS: 5}
			boot[i].Max = workitem.Dimensions{CPUMillis: 6000, MemoryMiB: 8000, DiskMiB: 8000, Processes: 4}
			boot[i].TelemetryMaxAgeMs = 120_000
		}
		mc.m.setProfiles(identity.Principal{}, boot)
		if _, err := mc.svc.SetProfiles(mc.ctx, workitem.ProfilesRequest{Profiles: boot}); err != nil {
			t.Fatal(err)
		}
		for i, h := range rHosts {
			r := workitem.PutHostRequest{HostID: h, Labels: rLabels[i], Capacity: rCapacities[i]}
			mc.m.apply()
			mc.m.putHost(identity.Principal{}, r)
			if _, err := mc.svc.PutHost(mc.ctx, r); err != nil {
				t.Fatal(err)
			}
			tr := workitem.TelemetryRequest{HostID: h, ReportSeq: 1, DiskFreeMiB: 100000}
			mc.seqs[h] = 1
			mc.m.apply()
			mc.m.telemetry(identity.Principal{}, tr)
			if _, err := mc.svc.ReportTelemetry(mc.ctx, tr); err != nil {
				t.Fatal(err)
			}
		}
		for i, n := 0, rapid.IntRange(40, 100).Draw(t, "steps"); i < n; i++ {
			actions[names[uniform(t, len(names), "action")]](t)
			mc.check(t)
		}
	})
}

var tallies = map[string]int{}

func tally(e *rErr) {
	if e == nil {
		tallies["ok"]++
		return
	}
	tallies[string(e.code)+"/"+e.reason]++
}

// uniform draws 0..n-1 about evenly (rapid's own draws favour small
// values, which would make the first item or extension most of them).
func uniform(t *rapid.T, n int, label string) int {
	return int(rapid.Uint64().Draw(t, label) % uint64(n))
}
