package authority_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/authority"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/google/go-cmp/cmp"
)

// The authority on a real replicated cluster: many adapter instances over
// every node (RMDD-16), a restart of every node on its files, and expiry
// across a leader change.

const clusterTenant = "tenant-rmdd16"

func clusterPolicies(t *testing.T) *authority.PolicySet {
	t.Helper()
	ps, err := authority.NewPolicySet([]authority.ConceptNamespacePolicy{{Namespace: "RMDD", Min: 1, Max: 999, PolicyVersion: "2"}})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func clusterRequest(id, owner, request string, ttl time.Duration) authority.ReserveRequest {
	return authority.ReserveRequest{ConceptID: id, TenantRef: clusterTenant, OwnerRef: owner, RequestRef: request,
		RepositoryRef: "repo-1", PurposeDigest: "sha256:purpose", TTLMs: ttl.Milliseconds()}
}

// clusterService is an adapter instance over node i of c.
func clusterService(c *clustertest.Cluster, i int, ps *authority.PolicySet) *authority.Service {
	n := c.Node(i)
	return authority.NewService(n, n, ps)
}

func clusterCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// clusterConflict requires err to be a conflict and returns the winner's
// public fields it carries.
func clusterConflict(t *testing.T, what string, err error) map[string]any {
	t.Helper()
	var e *errs.Error
	if !errors.As(err, &e) || !errors.Is(err, errs.Conflict) {
		t.Fatalf("%s: got %v, want a conflict", what, err)
	}
	for _, private := range []string{"owner_ref", "request_ref", "tenant_ref", "design_ref"} {
		if _, ok := e.Detail[private]; ok {
			t.Errorf("%s: conflict detail carries %s: %v", what, private, e.Detail)
		}
	}
	return e.Detail
}

// clusterContention is what one race of Reserve calls gave, by concept id.
type clusterContention map[string][]clusterCall

type clusterCall struct {
	instance int
	request  string
	res      *authority.ReserveResult
	err      error
}

// clusterRace has every instance reserve every id: one goroutine per
// instance, all released together, each going through the ids in the same
// order so that all fifty contend for each id at once. Each instance has
// its own owner and, per id and round, its own request ref.
func clusterRace(svcs []*authority.Service, ids []string, round string) clusterContention {
	out := clusterContention{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, svc := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for _, id := range ids {
				req := clusterRequest(id, fmt.Sprintf("inst-%02d", i), fmt.Sprintf("inst-%02d-%s-%s", i, id, round), 0)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := svc.Reserve(ctx, req)
				cancel()
				mu.Lock()
				out[id] = append(out[id], clusterCall{instance: i, request: req.RequestRef, res: res, err: err})
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// describe lists one id's calls, for a failure message.
func (cn clusterContention) describe(id string) string {
	var b strings.Builder
	for _, r := range cn[id] {
		fmt.Fprintf(&b, "  instance %d (%s): ", r.instance, r.request)
		if r.err != nil {
			fmt.Fprintf(&b, "error %v (outcome unknown: %v)\n", r.err, errs.IsOutcomeUnknown(r.err))
			continue
		}
		fmt.Fprintf(&b, "created %v reclaimed %v replayed %v: %s by %s/%s\n", r.res.Created, r.res.Reclaimed, r.res.Replayed,
			r.res.Record, r.res.Record.OwnerRef, r.res.Record.RequestRef)
	}
	return b.String()
}

// winner checks one id's race: exactly one call won the way want says
// (created or reclaimed), every other call is a conflict naming the
// winner's state and fence, or a replay of the winner's own claim; nothing
// else. It returns the winning call.
// winner is the one call that created (or, with reclaim, reclaimed) id,
// at a fence above the given one; every other call replayed its claim or
// met a conflict naming it.
func (cn clusterContention) winner(t *testing.T, id string, reclaim bool, above uint64) clusterCall {
	t.Helper()
	var won []clusterCall
	for _, r := range cn[id] {
		if r.err == nil && clusterCountTrue(r.res.Created, r.res.Reclaimed, r.res.Replayed) != 1 {
			t.Errorf("%s: instance %d: created %v, reclaimed %v, replayed %v; want exactly one", id, r.instance, r.res.Created, r.res.Reclaimed, r.res.Replayed)
		}
		switch {
		case r.err == nil && (r.res.Created && !reclaim || r.res.Reclaimed && reclaim):
			won = append(won, r)
		case r.err == nil && (r.res.Created || r.res.Reclaimed):
			t.Errorf("%s: instance %d: created %v, reclaimed %v; want the other", id, r.instance, r.res.Created, r.res.Reclaimed)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%s: %d winners, want exactly 1; the %d calls:\n%s", id, len(won), len(cn[id]), cn.describe(id))
	}
	w := won[0]
	if w.res.Record.Fence <= above || w.res.Record.State != authority.Reserved || w.res.Record.RequestRef != w.request {
		t.Errorf("%s: winner's record %s (request %s), want reserved at a fence above %d for %s", id, w.res.Record, w.res.Record.RequestRef, above, w.request)
	}
	for _, r := range cn[id] {
		switch {
		case r.err == nil && r.res.Replayed:
			// Only a replay of the winner's own claim would be sound.
			if diff := cmp.Diff(w.res.Record, r.res.Record); diff != "" || r.request != w.request {
				t.Errorf("%s: instance %d got a replay of another claim (-winner +replay):\n%s", id, r.instance, diff)
			}
		case r.err == nil:
			continue // the winner, or reported above
		default:
			if errors.Is(r.err, authority.ErrAuthorityUnavailable) {
				t.Errorf("%s: instance %d: the authority was unavailable: %v", id, r.instance, r.err)
				continue
			}
			var e *errs.Error
			if !errors.As(r.err, &e) || !errors.Is(r.err, errs.Conflict) {
				t.Errorf("%s: instance %d: %v, want a conflict", id, r.instance, r.err)
				continue
			}
			d := clusterConflict(t, id, r.err)
			if d["state"] != string(authority.Reserved) || d["fence"] != w.res.Record.Fence || d["concept_id"] != id {
				t.Errorf("%s: instance %d: conflict names %v, want the winner (reserved, fence %d)", id, r.instance, d, w.res.Record.Fence)
			}
		}
	}
	return w
}

func clusterCountTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// clusterReadEverywhere requires every node to read want for id: linearizably
// through an adapter over each node, and, once the replicas converged,
// the same stored node from each node's own replica.
func clusterReadEverywhere(t *testing.T, c *clustertest.Cluster, ps *authority.PolicySet, id string, want *authority.Record) {
	t.Helper()
	var first *nodes.Record
	for i := range c.Size() {
		got, err := clusterService(c, i, ps).Get(clusterCtx(t), id, clusterTenant)
		if err != nil {
			t.Fatalf("get %s through n%d: %v", id, i+1, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("get %s through n%d differs from the winner's record (-want +got):\n%s", id, i+1, diff)
		}
		n := c.Node(i)
		local, err := nodes.On(n).Get(clusterCtx(t), "concept-reservation:"+id, fsm.Stale)
		if err != nil {
			t.Fatalf("stale get %s on n%d: %v", id, i+1, err)
		}
		// The cluster enables set_index, so the claim's fence is the log
		// index of its last write, not a count.
		if local.ModifiedIndex != want.Fence {
			t.Errorf("%s on n%d: fence %d, want the index of the claim's last write (%d)", id, i+1, want.Fence, local.ModifiedIndex)
		}
		if first == nil {
			first = local
		} else if diff := cmp.Diff(first, local); diff != "" {
			t.Errorf("replica n%d holds another %s than n1 (-n1 +n%d):\n%s", i+1, id, i+1, diff)
		}
	}
}

// RMDD-16: fifty adapter instances spread over the three nodes of one
// cluster race for the same ten ids; then half the ids are released and
// they race again.
func TestFiftyInstancesContend(t *testing.T) {
	const instances = 50
	ps := clusterPolicies(t)
	// The production default raft timings, not clustertest's fast ones:
	// this test is about contention, and under -race on two loaded cores
	// a 200 ms leader lease sometimes deposes a healthy leader, leaving
	// calls in flight with an unknown outcome.
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Configure: func(_ int, cfg *cluster.Config) {
		def := cluster.DefaultConfig()
		def.Domains = builtin.Domains()
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = def.HeartbeatTimeout, def.ElectionTimeout, def.LeaderLeaseTimeout
	}})
	svcs := make([]*authority.Service, instances)
	for i := range svcs {
		svcs[i] = clusterService(c, i%c.Size(), ps)
	}
	var ids []string
	for k := range 10 {
		ids = append(ids, fmt.Sprintf("RMDD-%d", 160+k))
	}

	start := time.Now()
	first := clusterRace(svcs, ids, "a")
	t.Logf("round 1: %d calls in %v", instances*len(ids), time.Since(start).Round(time.Millisecond))
	winners := map[string]clusterCall{}
	current := map[string]*authority.Record{}
	for _, id := range ids {
		winners[id] = first.winner(t, id, false, 0)
		current[id] = winners[id].res.Record
	}
	c.WaitConverged(10 * time.Second)
	for _, id := range ids {
		clusterReadEverywhere(t, c, ps, id, current[id])
	}

	// The winners of the even ids release them; everyone races again,
	// with new request refs.
	released := map[string]uint64{} // the fence of the release
	for k, id := range ids {
		if k%2 != 0 {
			continue
		}
		w := winners[id]
		rel, err := svcs[w.instance].Transition(clusterCtx(t), authority.TransitionRequest{ConceptID: id, TenantRef: clusterTenant,
			OwnerRef: w.res.Record.OwnerRef, ReservationID: w.res.Record.ReservationID, Fingerprint: w.res.Record.Fingerprint,
			ExpectedFence: w.res.Record.Fence, Action: authority.Release})
		if err != nil || rel.Record.State != authority.Released || rel.Record.Fence <= w.res.Record.Fence || rel.Record.PrevFence != w.res.Record.Fence {
			t.Fatalf("release %s by its winner: %+v %v", id, rel, err)
		}
		released[id] = rel.Record.Fence
	}
	start = time.Now()
	second := clusterRace(svcs, ids, "b")
	t.Logf("round 2: %d calls in %v", instances*len(ids), time.Since(start).Round(time.Millisecond))
	for _, id := range ids {
		if fence, ok := released[id]; ok {
			w := second.winner(t, id, true, fence)
			if w.res.Record.ReleasedAtMs != 0 || w.res.Record.ReservationID == current[id].ReservationID {
				t.Errorf("%s: reclaimed record %+v carries the old claim's release or reservation id", id, w.res.Record)
			}
			current[id] = w.res.Record
		} else {
			for _, r := range second[id] {
				if r.err == nil {
					t.Errorf("%s is held, yet instance %d got %+v", id, r.instance, r.res)
				} else if d := clusterConflict(t, id, r.err); d["fence"] != current[id].Fence || d["state"] != string(authority.Reserved) {
					t.Errorf("%s: instance %d: conflict names %v, want the first winner", id, r.instance, d)
				}
			}
		}
	}
	c.WaitConverged(10 * time.Second)
	for _, id := range ids {
		clusterReadEverywhere(t, c, ps, id, current[id])
	}
}

// clusterUntilAvailable retries op while the authority says it is unavailable,
// as a caller does after a restart ("defer and retry"), for at most 20s.
func clusterUntilAvailable[T any](t *testing.T, what string, op func(ctx context.Context) (T, error)) T {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err := op(ctx)
		cancel()
		if err == nil {
			return v
		}
		if !errors.Is(err, authority.ErrAuthorityUnavailable) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s: %v; retrying", what, err)
		time.Sleep(100 * time.Millisecond)
	}
}

// Every node stops and restarts on its boltdb files; the claims read back
// unchanged through every node, and materialize (fence 2, fragment and
// view). One claim had been transitioned before the stop without its
// projection, as if the process died between the two steps: materializing
// it again replays the transition and writes only the projection.
func TestRestartReadsAndMaterializes(t *testing.T) {
	ps := clusterPolicies(t)
	c := clustertest.New(t, clustertest.Options{TCP: true})
	svc := clusterService(c, c.WaitLeader(20*time.Second), ps)
	ids := []string{"RMDD-201", "RMDD-202", "RMDD-203"}
	interrupted := "RMDD-203"
	before := map[string]*authority.Record{}
	reserved := map[string]uint64{} // the fence each claim was reserved at
	for _, id := range ids {
		res, err := svc.Reserve(clusterCtx(t), clusterRequest(id, "alice", "req-"+id, 0))
		if err != nil || !res.Created {
			t.Fatalf("reserve %s: %+v %v", id, res, err)
		}
		before[id], reserved[id] = res.Record, res.Record.Fence
	}
	r := before[interrupted]
	mid, err := svc.Transition(clusterCtx(t), authority.TransitionRequest{ConceptID: interrupted, TenantRef: clusterTenant, OwnerRef: "alice",
		ReservationID: r.ReservationID, Fingerprint: r.Fingerprint, ExpectedFence: r.Fence, Action: authority.Materialize})
	if err != nil || mid.Record.Fence <= r.Fence || mid.Record.PrevFence != r.Fence {
		t.Fatalf("materialize %s without projecting: %+v %v", interrupted, mid, err)
	}
	before[interrupted] = mid.Record

	for i := range c.Size() {
		c.Stop(i)
	}
	for i := range c.Size() {
		c.Restart(i)
	}
	leader := c.WaitLeader(20 * time.Second)
	c.WaitConverged(20 * time.Second)
	for i := range c.Size() {
		for _, id := range ids {
			got := clusterUntilAvailable(t, fmt.Sprintf("get %s through n%d after the restart", id, i+1), func(ctx context.Context) (*authority.Record, error) {
				return clusterService(c, i, ps).Get(ctx, id, clusterTenant)
			})
			if diff := cmp.Diff(before[id], got); diff != "" {
				t.Errorf("%s through n%d after the restart (-before +after):\n%s", id, i+1, diff)
			}
		}
	}

	repo := t.TempDir()
	crs := authority.NewConceptReservationService(clusterService(c, leader, ps), repo)
	materialize := func(id string) *authority.Record {
		t.Helper()
		b := before[id]
		return clusterUntilAvailable(t, "materialize "+id, func(ctx context.Context) (*authority.Record, error) {
			return crs.Materialize(ctx, authority.MaterializeRequest{ConceptID: id, TenantRef: clusterTenant, OwnerRef: "alice",
				ReservationID: b.ReservationID, Fingerprint: b.Fingerprint, ExpectedFence: reserved[id]})
		})
	}
	after := map[string]*authority.Record{}
	for _, id := range ids {
		got := materialize(id)
		if got.State != authority.Materialized || got.Fence <= reserved[id] || got.PrevFence != reserved[id] || got.ReservationID != before[id].ReservationID {
			t.Errorf("materialize %s after the restart: %s, want materialized from fence %d of %s", id, got, reserved[id], before[id].ReservationID)
		}
		after[id] = got
	}
	if diff := cmp.Diff(before[interrupted], after[interrupted]); diff != "" {
		t.Errorf("the interrupted materialization was not a replay of the committed transition (-committed +replayed):\n%s", diff)
	}
	// A retry of a finished materialization changes nothing.
	if again := materialize(ids[0]); again.Fence != after[ids[0]].Fence {
		t.Errorf("retried materialize: %s", again)
	}

	want := map[string]authority.ProjectedRecord{}
	for _, id := range ids {
		a := after[id]
		want[id] = authority.ProjectedRecord{ConceptID: id, Namespace: "RMDD", PolicyVersion: "2", ReservationID: a.ReservationID,
			Fence: a.Fence, State: authority.Materialized, Visibility: authority.VisibilityNone, AtMs: a.UpdatedAtMs}
	}
	frags, err := filepath.Glob(filepath.Join(repo, "concepts", "fragments", "*.jsonl"))
	if err != nil || len(frags) != 1 {
		t.Fatalf("fragments %v (%v), want alice's one", frags, err)
	}
	lines := clusterFragment(t, frags[0])
	got := map[string]authority.ProjectedRecord{}
	for _, l := range lines {
		got[l.ConceptID] = l
	}
	if len(lines) != len(ids) {
		t.Errorf("fragment has %d lines, want one per claim (%d): %+v", len(lines), len(ids), lines)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fragment (-want +got):\n%s", diff)
	}
	raw, err := os.ReadFile(filepath.Join(repo, "concepts", "view.json"))
	if err != nil {
		t.Fatal(err)
	}
	var view struct {
		Records []authority.ProjectedRecord `json:"records"`
	}
	if err := json.Unmarshal(raw, &view); err != nil {
		t.Fatal(err)
	}
	wantView := []authority.ProjectedRecord{want[ids[0]], want[ids[1]], want[ids[2]]}
	if diff := cmp.Diff(wantView, view.Records); diff != "" {
		t.Errorf("view.json (-want +got):\n%s", diff)
	}
	rep, err := crs.ReconcileProjection(clusterCtx(t), authority.ReconcileRequest{TenantRef: clusterTenant, MaxRecords: 10, SourceMarkers: ids})
	if err != nil {
		t.Fatal(err)
	}
	if rep.NativeRecords != 3 || rep.ProjectedRecords != 3 || len(rep.MissingProjections)+len(rep.OrphanRecords)+len(rep.StateMismatches)+len(rep.MarkersWithoutClaims) != 0 {
		t.Errorf("reconcile after the restart: %+v", rep)
	}
}

func clusterFragment(t *testing.T, path string) []authority.ProjectedRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []authority.ProjectedRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r authority.ProjectedRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A leader change neither resets nor extends a TTL: the deadline is FSM
// time, stamped by whichever leader proposes. Two claims are made on the
// first leader, which then stops. Before their deadlines, reclaims on the
// new leader (of one) and through the remaining follower (of the other)
// conflict, and the claims keep the deadlines they had; once FSM time
// passes them, the very first attempt on each path reclaims. The test
// moves the nodes' clocks past the deadlines (clustertest's Advance)
// instead of sleeping until them.
func TestExpiryAcrossLeaderChange(t *testing.T) {
	// Far longer than an election under -race on a loaded machine (it
	// usually takes about one second): time for the early attempts.
	const ttl = time.Minute
	ps := clusterPolicies(t)
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	old := c.WaitLeader(10 * time.Second)
	ids := []string{"RMDD-301", "RMDD-302"}
	first := map[string]*authority.Record{}
	for _, id := range ids {
		res, err := clusterService(c, old, ps).Reserve(clusterCtx(t), clusterRequest(id, "alice", "a-"+id, ttl))
		if err != nil || !res.Created {
			t.Fatalf("reserve %s: %+v %v", id, res, err)
		}
		if r := res.Record; r.ExpiresAtMs != r.CreatedAtMs+ttl.Milliseconds() {
			t.Fatalf("%s: created at %d, expires at %d; want a %v TTL", id, r.CreatedAtMs, r.ExpiresAtMs, ttl)
		}
		first[id] = res.Record
	}
	c.Stop(old)
	leader := c.WaitLeader(10 * time.Second)
	follower := -1
	for _, i := range c.Running() {
		if i != leader {
			follower = i
		}
	}
	// ids[0] is tried on the new leader, ids[1] through the follower.
	via := map[string]*authority.Service{ids[0]: clusterService(c, leader, ps), ids[1]: clusterService(c, follower, ps)}
	deadline := max(first[ids[0]].ExpiresAtMs, first[ids[1]].ExpiresAtMs)
	soonest := min(first[ids[0]].ExpiresAtMs, first[ids[1]].ExpiresAtMs)
	fsmNow := func() int64 { return c.Node(leader).FSM().Now() }
	t.Logf("n%d stopped; n%d leads %d ms of FSM time after the claims were made, %d ms before their deadlines",
		old+1, leader+1, fsmNow()-first[ids[0]].CreatedAtMs, soonest-fsmNow())
	if margin := soonest - fsmNow(); margin < 500 {
		t.Fatalf("the new leader came %d ms before the deadline: too late to try an early reclaim; the TTL is too short for this machine", margin)
	}

	// Before the deadlines.
	for _, id := range ids {
		a := first[id]
		_, err := via[id].Reserve(clusterCtx(t), clusterRequest(id, "bob", "b-"+id, ttl))
		d := clusterConflict(t, id+": reclaim before the deadline", err)
		if d["expires_at_ms"] != a.ExpiresAtMs || d["created_at_ms"] != a.CreatedAtMs || d["fence"] != a.Fence || d["state"] != string(authority.Reserved) {
			t.Errorf("%s: early reclaim: conflict names %v, want the unchanged claim (created %d, expires %d, fence %d)", id, d, a.CreatedAtMs, a.ExpiresAtMs, a.Fence)
		}
		_, err = via[id].Transition(clusterCtx(t), authority.TransitionRequest{ConceptID: id, TenantRef: clusterTenant, OwnerRef: "alice",
			ReservationID: a.ReservationID, Fingerprint: a.Fingerprint, ExpectedFence: a.Fence, Action: authority.Expire})
		if !errors.Is(err, errs.Conflict) {
			t.Errorf("%s: expire before the deadline: %v, want a conflict (not due yet)", id, err)
		}
		got, err := via[id].Get(clusterCtx(t), id, clusterTenant)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, got); diff != "" {
			t.Errorf("%s changed across the leader change (-before +after):\n%s", id, diff)
		}
	}
	now := fsmNow()
	if now < first[ids[1]].CreatedAtMs || now >= soonest {
		t.Fatalf("FSM time on the new leader is %d, want in [%d, %d): it follows the leaders' stamps, and the early attempts came before the deadlines", now, first[ids[1]].CreatedAtMs, soonest)
	}

	// 1 ms past the later deadline on every running node: the first
	// attempt must reclaim. A TTL reset or extended by the leader change
	// (about a second without a leader, logged above) would still
	// conflict.
	const margin = 1
	c.Advance(time.Duration(deadline+margin-now) * time.Millisecond)
	for _, id := range ids {
		a := first[id]
		re, err := via[id].Reserve(clusterCtx(t), clusterRequest(id, "bob", "b-"+id, ttl))
		if err != nil || !re.Reclaimed {
			t.Errorf("%s: reclaim %d ms or more after its deadline %d: %+v %v", id, margin, a.ExpiresAtMs, re, err)
			continue
		}
		if r := re.Record; r.Fence <= a.Fence || r.PrevFence != a.Fence || r.OwnerRef != "bob" || r.CreatedAtMs < a.ExpiresAtMs || r.ExpiresAtMs != r.CreatedAtMs+ttl.Milliseconds() {
			t.Errorf("%s: reclaimed record %+v: want a fence above %d for bob, created at or after %d, a fresh %v TTL", id, r, a.Fence, a.ExpiresAtMs, ttl)
		}
		_, err = via[id].Transition(clusterCtx(t), authority.TransitionRequest{ConceptID: id, TenantRef: clusterTenant, OwnerRef: "alice",
			ReservationID: a.ReservationID, Fingerprint: a.Fingerprint, ExpectedFence: a.Fence, Action: authority.Materialize})
		if !errors.Is(err, errs.StaleFence) {
			t.Errorf("%s: alice's expired claim after the reclaim: %v, want stale_fence", id, err)
		}
		first[id] = re.Record
	}

	c.Restart(old)
	c.WaitConverged(10 * time.Second)
	for _, id := range ids {
		clusterReadEverywhere(t, c, ps, id, first[id])
	}
}
