package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/linearizability"
)

// Concurrent clients on every node create, compare-and-set and read a few
// nodes while the leader is stopped and later restarted; porcupine then
// checks the whole history against the sequential model of the node
// primitives. Writes whose outcome is unknown stay in the history as
// "may have been applied, at any time after the call".
func TestNodesLinearizableAcrossLeaderStop(t *testing.T) {
	const (
		clients   = 8
		ids       = 4
		opTimeout = 2 * time.Second
		// The run is driven by progress, not by the clock, so that a slow
		// machine gives the same amount of history: each phase lasts until
		// enough operations succeeded, bounded by phaseLimit.
		minOK          = 150
		minOKAfterStop = 50
		phaseLimit     = 20 * time.Second
	)
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	r := &linRun{t: t, c: c, h: linearizability.NewHistory(), seed: uint64(time.Now().UnixNano()), ids: ids, opTimeout: opTimeout}
	t.Logf("seed %d (it fixes each client's choices, not the interleaving)", r.seed)

	begin := time.Now()
	runCtx, stopClients := context.WithTimeout(context.Background(), 4*phaseLimit)
	var wg sync.WaitGroup
	// Also on an early t.Fatal: no client may outlive the test.
	defer func() {
		stopClients()
		wg.Wait()
	}()
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.client(runCtx, i)
		}()
	}

	// waitOK waits until count() reaches n, or phaseLimit passes.
	waitOK := func(count func() int64, n int64) {
		c.Eventually(phaseLimit, func() bool { return count() >= n })
	}
	waitOK(r.ok.Load, minOK/3)
	old := c.WaitLeader(5 * time.Second)
	r.h.Mark("cluster", fmt.Sprintf("stopping leader n%d", old+1))
	c.Stop(old)
	r.stopped.Store(true)
	r.h.Mark("cluster", fmt.Sprintf("leader n%d stopped", old+1))
	elected := time.Now()
	newLeader := c.WaitLeader(10 * time.Second)
	r.h.Mark("cluster", fmt.Sprintf("n%d leads", newLeader+1))
	t.Logf("stopped leader n%d at %v; n%d leads %v later", old+1, time.Since(begin).Round(time.Millisecond), newLeader+1, time.Since(elected).Round(time.Millisecond))

	waitOK(r.okAfterStop.Load, minOKAfterStop)
	c.Restart(old)
	r.h.Mark("cluster", fmt.Sprintf("n%d restarted", old+1))
	waitOK(r.ok.Load, minOK+minOK/3)
	stopClients()
	wg.Wait()

	counts := r.h.Counts()
	t.Logf("%d operations in %v: %d ok (%d after the leader stop; %d created or swapped), %d outcome unknown %v, %d failed and dropped (%d reads, %d writes certainly not applied); latency %s",
		counts.Returned+counts.Unknown+counts.Dropped, time.Since(begin).Round(time.Millisecond),
		r.ok.Load(), r.okAfterStop.Load(), r.okWrites.Load(), counts.Unknown, r.unknownCodes(),
		counts.Dropped, r.droppedReads.Load(), r.droppedWrites.Load(), r.latencies())
	if counts.Pending != 0 {
		t.Errorf("%d operations were never resolved", counts.Pending)
	}
	if res := linearizability.Check(t, linearizability.NodesModel(), r.h, 10*time.Second); res != porcupine.Ok {
		t.Fatalf("linearizability check: %s (seed %d)", res, r.seed)
	}
	if n := r.ok.Load(); n < minOK {
		t.Errorf("only %d operations succeeded, want at least %d: a history of nothing proves nothing", n, minOK)
	}
	if n := r.okAfterStop.Load(); n < minOKAfterStop {
		t.Errorf("only %d operations succeeded after the leader stopped, want at least %d", n, minOKAfterStop)
	}
	if n := r.okWrites.Load(); n < minOK/10 {
		t.Errorf("only %d writes created or swapped, want at least %d", n, minOK/10)
	}
	c.WaitConverged(10 * time.Second)
}

// linRun is one run: the cluster, the history and the tallies.
type linRun struct {
	t         *testing.T
	c         *clustertest.Cluster
	h         *linearizability.History
	seed      uint64
	ids       int
	opTimeout time.Duration
	stopped   atomic.Bool // the leader has been stopped

	ok, okAfterStop, okWrites   atomic.Int64
	droppedReads, droppedWrites atomic.Int64

	mu      sync.Mutex
	unknown map[string]int                               // by error code
	latency map[linearizability.NodeKind][]time.Duration // of successful calls
}

// node is the node client i talks to: its own, c.Node(i%3), while that
// runs, else another running one.
func (r *linRun) node(i int) *cluster.Node {
	if n := r.c.Node(i % r.c.Size()); n != nil {
		return n
	}
	for _, j := range r.c.Running() {
		if n := r.c.Node((j + i) % r.c.Size()); n != nil {
			return n
		}
	}
	return nil
}

// client runs random operations until ctx ends. It conditions each CAS on
// the last fence it saw for the id, so many CAS calls swap.
func (r *linRun) client(ctx context.Context, i int) {
	rng := rand.New(rand.NewPCG(r.seed, uint64(i)))
	owner := fmt.Sprintf("c%d", i)
	fences := map[string]uint64{}
	for ctx.Err() == nil {
		n := r.node(i)
		if n == nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		nodes := fsm.NewNodes(n, n)
		id := fmt.Sprintf("obj-%d", rng.IntN(r.ids))
		var in linearizability.NodeInput
		switch p := rng.IntN(10); {
		case p < 2:
			in = linearizability.NodeInput{Kind: linearizability.NodeCreate, ID: id, Owner: owner, Fence: 1}
		case p < 6:
			expect := max(fences[id], 1)
			in = linearizability.NodeInput{Kind: linearizability.NodeCAS, ID: id, Owner: owner, Expect: expect, Fence: expect + 1}
		default:
			in = linearizability.NodeInput{Kind: linearizability.NodeGet, ID: id}
		}
		if out, ok := r.do(nodes, i, in); ok && !out.NotFound {
			fences[id] = out.Fence
		}
	}
}

// do runs one operation with its own deadline, records it, and returns
// its decided output.
func (r *linRun) do(nodes *fsm.Nodes, client int, in linearizability.NodeInput) (linearizability.NodeOutput, bool) {
	afterStop := r.stopped.Load()
	ctx, cancel := context.WithTimeout(context.Background(), r.opTimeout)
	defer cancel()
	op := r.h.Call(client, in)
	start := time.Now()
	var out linearizability.NodeOutput
	var err error
	switch in.Kind {
	case linearizability.NodeCreate:
		var res *fsm.CreateNodeResult
		res, err = nodes.CreateIfAbsent(ctx, fsm.CreateNodeRequest{NodeID: in.ID, Properties: map[string]any{"fence": in.Fence, "owner": in.Owner}})
		if err == nil {
			out = r.observe(res.Node)
			out.Created = res.Created
		}
	case linearizability.NodeCAS:
		var res *fsm.CASResult
		res, err = nodes.CompareAndSet(ctx, fsm.CASRequest{
			NodeID:     in.ID,
			Conditions: map[string]any{"fence": in.Expect},
			Updates:    map[string]any{"fence": in.Fence, "owner": in.Owner},
		})
		if err == nil {
			out = r.observe(res.Node)
			out.Swapped = res.Swapped
		}
	case linearizability.NodeGet:
		var n *fsm.Node
		if n, err = nodes.Get(ctx, in.ID, fsm.Linearizable); err == nil {
			out = r.observe(*n)
		}
	}
	write := in.Kind != linearizability.NodeGet
	switch {
	case err == nil:
	case errors.Is(err, errs.NotFound) && in.Kind != linearizability.NodeCreate:
		out, err = linearizability.NodeOutput{NotFound: true}, nil // decided
	default:
		op.Fail(err, write)
		switch {
		case !write:
			r.droppedReads.Add(1)
		case linearizability.CertainlyNotApplied(err):
			r.droppedWrites.Add(1)
		default:
			r.mu.Lock()
			if r.unknown == nil {
				r.unknown = map[string]int{}
			}
			r.unknown[string(errs.CodeOf(err))]++
			r.mu.Unlock()
		}
		return out, false
	}
	op.Return(out)
	took := time.Since(start)
	r.mu.Lock()
	if r.latency == nil {
		r.latency = map[linearizability.NodeKind][]time.Duration{}
	}
	r.latency[in.Kind] = append(r.latency[in.Kind], took)
	r.mu.Unlock()
	r.ok.Add(1)
	if afterStop {
		r.okAfterStop.Add(1)
	}
	if out.Created || out.Swapped {
		r.okWrites.Add(1)
	}
	return out, true
}

// observe reads the model's view of a node: its fence, owner and version.
func (r *linRun) observe(n fsm.Node) linearizability.NodeOutput {
	out := linearizability.NodeOutput{Version: n.Version}
	if err := json.Unmarshal(n.Properties["fence"], &out.Fence); err != nil {
		r.t.Errorf("node %s: fence %s: %v", n.NodeID, n.Properties["fence"], err)
	}
	if err := json.Unmarshal(n.Properties["owner"], &out.Owner); err != nil {
		r.t.Errorf("node %s: owner %s: %v", n.NodeID, n.Properties["owner"], err)
	}
	return out
}

func (r *linRun) unknownCodes() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for code, n := range r.unknown {
		parts = append(parts, fmt.Sprintf("%s:%d", code, n))
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

// latencies summarizes successful calls by kind: count, median and max.
func (r *linRun) latencies() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for _, k := range []linearizability.NodeKind{linearizability.NodeCreate, linearizability.NodeCAS, linearizability.NodeGet} {
		d := append([]time.Duration(nil), r.latency[k]...)
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		parts = append(parts, fmt.Sprintf("%v n=%d p50=%v max=%v", k, len(d), d[len(d)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}
