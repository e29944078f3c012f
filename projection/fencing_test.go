package projection_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/projection"
)

// ack is a publish a holder saw succeed: under its lease's epoch, the
// publication the cluster answered.
type ack struct {
	target     string
	epoch      uint64
	seq, resEp uint64
}

// fenceRun is what the holders of one run saw.
type fenceRun struct {
	mu       sync.Mutex
	grants   map[uint64]string // epoch -> target, every grant a holder saw
	acks     []ack
	outcomes map[string]int
}

func (r *fenceRun) count(what string) {
	r.mu.Lock()
	r.outcomes[what]++
	r.mu.Unlock()
}

// TestStaleHolderNeverChangesCurrentAfterTakeover is the fencing property,
// by a concurrency test: holders race acquire and publish on two targets
// with a short lease (some render too slowly for it), while their nodes
// are paused and partitioned away and the leader is cut off. Afterwards:
//
//   - every publish a holder saw succeed was made under its own lease, and
//     no grant of the target came between that lease and the publication
//     (a holder that was taken over never had a publish committed);
//   - the committed publications, and on every node the sequence written
//     to current.json, are the same: every committed publication, in log
//     order, and nothing else;
//   - no node wrote a publication of epoch e after it applied a grant of a
//     later epoch of that target;
//   - every node's current.json is the last publication, whole.
func TestStaleHolderNeverChangesCurrentAfterTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("fault injection; skipped with -short")
	}
	pc := newPCluster(t, roots(t, 3), clustertest.Options{})
	const ttl = 250
	targets := []string{pc.setup(ttl, "race-a")}
	var second projection.TargetResult
	pc.call(2, agent.ID, http.MethodPost, "/v1/projection/targets", projection.TargetRequest{Attested: attested("race-b"), Channels: bothChannels}).want(t, "target", 201, "", &second)
	targets = append(targets, second.TargetID)

	run := &fenceRun{grants: map[uint64]string{}, outcomes: map[string]int{}}
	var stop atomic.Bool
	var wg sync.WaitGroup
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	// Producers keep the channels moving, so publications differ.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for w := uint64(1); !stop.Load(); w++ {
			for _, id := range targets {
				ctx, cancel := context.WithTimeout(as(router), 2*time.Second)
				env := envelope(projection.ChannelComputedRoute, w, time.Now().Add(time.Hour).UnixMilli(), fmt.Sprintf("route %d", w))
				node := pc.Node(int(w) % 3)
				_, _ = projection.NewService(node, node).Submit(ctx, projection.SubmitRequest{TargetID: id, Channel: projection.ChannelComputedRoute, SourceWatermark: w, Envelope: env})
				cancel()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	for h := 0; h < 6; h++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder(t, pc, h%3, targets[h%2], rand.New(rand.NewPCG(seed, uint64(h))), &stop, run)
		}()
	}
	// Faults on the holders' nodes: pauses, isolation, the leader cut off.
	rng := rand.New(rand.NewPCG(seed, 99))
	faults := []string{}
	for round := 0; round < 6; round++ {
		time.Sleep(400 * time.Millisecond)
		n := rng.IntN(3)
		switch round % 3 {
		case 0:
			faults = append(faults, fmt.Sprintf("pause n%d", n+1))
			pc.Pause(n)
			time.Sleep(time.Duration(300+rng.IntN(500)) * time.Millisecond)
			pc.Resume(n)
		case 1:
			faults = append(faults, fmt.Sprintf("isolate n%d", n+1))
			pc.Isolate(n)
			time.Sleep(time.Duration(400+rng.IntN(600)) * time.Millisecond)
			pc.Heal()
		case 2:
			l := pc.WaitLeader(10 * time.Second)
			faults = append(faults, fmt.Sprintf("isolate leader n%d", l+1))
			pc.Isolate(l)
			time.Sleep(time.Second)
			pc.Heal()
		}
	}
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	pc.Heal()
	pc.WaitConverged(20 * time.Second)
	t.Logf("faults %v; outcomes %v", faults, run.outcomes)
	checkFencing(t, pc, targets, run)
}

// holder is one writer process on node i: acquire, render (sometimes too
// slowly for its lease), publish, release on failure; again and again.
func holder(t *testing.T, pc *pcluster, i int, target string, rng *rand.Rand, stop *atomic.Bool, run *fenceRun) {
	node := pc.Node(i)
	s := projection.NewService(node, node)
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(as(agent), 2*time.Second) }
	for !stop.Load() {
		ctx, cancel := call()
		l, err := s.Acquire(ctx, projection.AcquireRequest{TargetID: target, HolderInstanceDigest: digest(fmt.Sprint("holder-", i))})
		cancel()
		if err != nil {
			run.count("acquire " + string(errs.CodeOf(err)))
			time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
			continue
		}
		run.mu.Lock()
		run.grants[l.FencingEpoch] = target
		run.mu.Unlock()
		// The render: mostly quick, sometimes slower than the lease.
		time.Sleep([]time.Duration{0, 0, 10 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond}[rng.IntN(5)])
		fence := fenceOf(l)
		ctx, cancel = call()
		res, err := s.Publish(ctx, fence)
		cancel()
		if errs.IsOutcomeUnknown(err) || errors.Is(err, context.DeadlineExceeded) {
			ctx, cancel = call()
			res, err = s.Publish(ctx, fence) // a retry answers the same publication, if any
			cancel()
		}
		if err == nil {
			run.mu.Lock()
			run.acks = append(run.acks, ack{target: target, epoch: l.FencingEpoch, seq: res.PublicationSeq, resEp: res.FencingEpoch})
			run.mu.Unlock()
			run.count("published")
			continue
		}
		run.count("publish " + string(errs.CodeOf(err)))
		ctx, cancel = call()
		_, _ = s.Release(ctx, fence)
		cancel()
	}
}

func checkFencing(t *testing.T, pc *pcluster, targets []string, run *fenceRun) {
	t.Helper()
	// Every grant and publication any node applied, from the writers'
	// events: epochs and publication_seq are log indexes, so index order
	// is log order.
	grants := map[string][]uint64{} // target -> epochs, sorted
	committed := map[string]map[uint64]uint64{}
	for _, id := range targets {
		committed[id] = map[uint64]uint64{}
	}
	addGrant := func(target string, e uint64) {
		if !slices.Contains(grants[target], e) {
			grants[target] = append(grants[target], e)
		}
	}
	for i := range pc.roots {
		for _, e := range pc.ev.of(i) {
			switch e.Kind {
			case projection.EventGranted:
				addGrant(e.TargetID, e.FencingEpoch)
			default:
				if ep, ok := committed[e.TargetID][e.PublicationSeq]; ok && ep != e.FencingEpoch {
					t.Fatalf("publication %d of %s has epoch %d on one node, %d on another", e.PublicationSeq, e.TargetID, ep, e.FencingEpoch)
				}
				committed[e.TargetID][e.PublicationSeq] = e.FencingEpoch
			}
		}
	}
	for e, target := range run.grants {
		addGrant(target, e)
	}
	for _, g := range grants {
		slices.Sort(g)
	}
	// takenOver reports whether a grant of target came after epoch e and
	// before index s.
	takenOver := func(target string, e, s uint64) bool {
		for _, g := range grants[target] {
			if g > e && g < s {
				return true
			}
		}
		return false
	}
	for _, a := range run.acks {
		ep, ok := committed[a.target][a.seq]
		if a.resEp != a.epoch || !ok || ep != a.epoch || takenOver(a.target, a.epoch, a.seq) {
			t.Errorf("a holder at epoch %d of %s saw publication %d (epoch %d, committed %t with epoch %d) succeed after a takeover or under another lease",
				a.epoch, a.target, a.seq, a.resEp, ok, ep)
		}
	}
	total := 0
	for _, id := range targets {
		var seqs []uint64
		for s, e := range committed[id] {
			seqs = append(seqs, s)
			if !slices.Contains(grants[id], e) || takenOver(id, e, s) {
				t.Errorf("publication %d of %s at epoch %d: after a later grant (grants %v)", s, id, e, grants[id])
			}
		}
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		total += len(seqs)
		for i := range pc.roots {
			var written []uint64
			granted := uint64(0)
			for _, e := range pc.ev.of(i) {
				if e.TargetID != id {
					continue
				}
				switch e.Kind {
				case projection.EventGranted:
					granted = max(granted, e.FencingEpoch)
				case projection.EventWritten:
					written = append(written, e.PublicationSeq)
					if e.FencingEpoch < granted {
						t.Errorf("n%d wrote publication %d of epoch %d after it applied the grant of epoch %d", i+1, e.PublicationSeq, e.FencingEpoch, granted)
					}
				case projection.EventFailed:
					t.Errorf("n%d: %v", i+1, e.Err)
				}
			}
			if !slices.Equal(written, seqs) {
				t.Errorf("n%d wrote %v to current.json of %s; the committed publications are %v", i+1, written, id, seqs)
			}
		}
		if len(seqs) == 0 {
			continue
		}
		cur := pc.call(0, agent.ID, http.MethodGet, "/v1/projection/targets/"+id+"/current?consistency=linearizable", nil)
		cur.want(t, "current", 200, "", nil)
		p, seq := mustParse(t, cur.body[:len(cur.body)-1])
		if seq != seqs[len(seqs)-1] {
			t.Errorf("%s: the last publication is %d, the committed ones end at %d", id, seq, seqs[len(seqs)-1])
		}
		pc.waitFiles(id, cur.body[:len(cur.body)-1])
		_ = p
	}
	// The run exercised what it claims to: publications, and stale or
	// late holders refused.
	refused := run.outcomes["publish "+string(errs.CodeStaleFence)] + run.outcomes["publish "+string(errs.CodeExpired)]
	if total < 10 || len(run.acks) < 10 || refused == 0 {
		t.Fatalf("the run did not exercise takeovers: %d publications, %d acknowledged, %d refused (%v)", total, len(run.acks), refused, run.outcomes)
	}
}
