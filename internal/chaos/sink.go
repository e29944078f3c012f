package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// FencedSink is the lock-set test that locks without fences fail (Jepsen
// on etcd): a capacity lease on a one-slot cell is the lock, and its
// fence token guards a read-modify-write of a list held by an external
// sink. Each client, holding the lock, reads the list, appends an element
// of its own and writes the list back; now and then it stalls for longer
// than the lease's TTL first, as a process in a GC pause would, so the
// lease expires and another client takes the lock while the first still
// believes it holds it.
//
// With Enforce the sink refuses any read or write whose fence is below
// the highest it has seen, which is what makes the lease safe: at the end
// every acknowledged append must be in the list exactly once. Without
// Enforce the same run loses appends, and Verify says so: that is the
// harness's proof that this check can fail.
type FencedSink struct {
	Enforce bool
	sink    *Sink
}

// NewFencedSink returns the workload; each Setup starts an empty sink.
func NewFencedSink(enforce bool) *FencedSink {
	return &FencedSink{Enforce: enforce, sink: newSink(enforce)}
}

func newSink(enforce bool) *Sink { return &Sink{enforce: enforce, acked: map[string]bool{}} }

const (
	sinkTenant = "tenant-sink"
	sinkCell   = "sink-lock"
	sinkClass  = "lock"
	sinkTTL    = 400 * time.Millisecond
	sinkStall  = 3 * sinkTTL / 2
)

func (w *FencedSink) Name() string {
	if w.Enforce {
		return "fenced-sink"
	}
	return "unfenced-sink"
}

// Model: the sink checks itself in Verify.
func (w *FencedSink) Model() (porcupine.Model, bool) { return porcupine.Model{}, false }

func (w *FencedSink) Setup(ctx context.Context, c *clustertest.Cluster) error {
	w.sink = newSink(w.Enforce)
	leader := c.Node(c.WaitLeader(timeout))
	_, err := capacity.NewService(leader, leader).UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: sinkTenant,
		Cell: capacity.CellSpec{CellID: sinkCell, Capacities: map[string]uint64{sinkClass: 1}}})
	return err
}

func (w *FencedSink) Client(i int, seed uint64) Client {
	return &sinkClient{id: i, w: w, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
}

// Verify checks the sink (the same on every call) and that the node's
// copy of the lock cell never holds more than its one slot. A fenced run
// in which no stale fence was refused did not test fencing: no lease
// expired under a holder that then used it. That fails too.
func (w *FencedSink) Verify(ctx context.Context, node *cluster.Node) error {
	st, err := capacity.NewService(node, node).Status(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: sinkTenant, CellID: sinkCell, MaxCount: 1}, fsm.Stale)
	if err != nil {
		return err
	}
	if len(st.Cells) != 1 || len(st.Cells[0].Classes) != 1 || st.Cells[0].Classes[0].Used > 1 {
		return fmt.Errorf("lock cell status %+v", st)
	}
	return w.sink.check()
}

type sinkClient struct {
	id  int
	w   *FencedSink
	rng *rand.Rand
	n   int
}

// Step is one locked transaction: acquire, read, maybe stall, append,
// write, release.
func (c *sinkClient) Step(node *cluster.Node, rec *Recorder) {
	svc := capacity.NewService(node, node)
	c.n++
	owner := fmt.Sprintf("o%d", c.id)
	lease, ok := c.acquire(svc, owner, rec)
	if !ok {
		time.Sleep(time.Duration(5+c.rng.IntN(20)) * time.Millisecond)
		return
	}
	list, ok := c.w.sink.Read(lease.Fence)
	if ok {
		if c.rng.IntN(10) == 0 {
			time.Sleep(sinkStall) // the lease expires meanwhile
		}
		element := fmt.Sprintf("c%d-%d", c.id, c.n)
		if c.w.sink.Write(lease.Fence, append(list, element), element) {
			rec.effective.Add(1)
		}
	}
	ctx, cancel := rec.OpContext()
	defer cancel()
	// A release that fails (the lease expired, or the cluster is down)
	// only leaves the slot to expire.
	_, _ = svc.Release(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: sinkTenant, OwnerDigest: owner,
		Leases: []capacity.LeaseRef{{LeaseID: lease.LeaseID, LeaseEpoch: lease.LeaseEpoch, Fence: lease.Fence}}})
}

func (c *sinkClient) acquire(svc *capacity.Service, owner string, rec *Recorder) (capacity.Lease, bool) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	key := fmt.Sprintf("c%d-%d", c.id, c.n)
	res, err := svc.Acquire(ctx, capacity.AcquireRequest{SchemaVersion: "1", TenantRef: sinkTenant, WorkItemID: key,
		OwnerDigest: owner, IdempotencyKey: key, TTLMs: sinkTTL.Milliseconds(),
		Demands: []capacity.Demand{{CellID: sinkCell, ResourceClass: sinkClass, Amount: 1}}})
	if err != nil || res == nil || res.Decision != capacity.Granted || len(res.Leases) != 1 {
		return capacity.Lease{}, false
	}
	l := res.Leases[0]
	rec.ReadBack(fmt.Sprintf("acquire of lock lease %s (fence %d)", l.LeaseID, l.Fence), readBackLease(l, func(got capacity.Lease) bool {
		return got.Fence == l.Fence
	}))
	return l, true
}

// Sink is the fenced external resource: a list, read and replaced whole.
type Sink struct {
	enforce bool

	mu       sync.Mutex
	maxFence uint64
	list     []string
	acked    map[string]bool // elements whose write was acknowledged
	refused  int
}

// Read returns the list, or false if fence is stale. A read raises the
// highest fence seen: a holder that read under fence f has made every
// holder below f stale, so none of them can overwrite what it will write.
func (s *Sink) Read(fence uint64) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.admit(fence) {
		return nil, false
	}
	return append([]string(nil), s.list...), true
}

// Write replaces the list unless fence is stale; element is the one the
// writer appended, acknowledged when the write is.
func (s *Sink) Write(fence uint64, list []string, element string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.admit(fence) {
		return false
	}
	s.list = list
	s.acked[element] = true
	return true
}

func (s *Sink) admit(fence uint64) bool {
	if s.enforce && fence < s.maxFence {
		s.refused++
		return false
	}
	s.maxFence = max(s.maxFence, fence)
	return true
}

// check requires every acknowledged element in the list exactly once.
func (s *Sink) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]int{}
	for _, e := range s.list {
		seen[e]++
	}
	var lost, dup []string
	for e := range s.acked {
		if seen[e] == 0 {
			lost = append(lost, e)
		}
	}
	for e, n := range seen {
		if n > 1 {
			dup = append(dup, e)
		}
	}
	if len(s.acked) == 0 {
		return errors.New("sink: no write was acknowledged; the run tested nothing")
	}
	if len(lost) > 0 || len(dup) > 0 {
		return fmt.Errorf("sink: %d of %d acknowledged writes lost (%v), %d duplicated (%v); %d stale fences refused",
			len(lost), len(s.acked), head(lost), len(dup), head(dup), s.refused)
	}
	if s.enforce && s.refused == 0 {
		return fmt.Errorf("sink: %d acknowledged writes but no stale fence refused: the run did not test fencing", len(s.acked))
	}
	return nil
}

// Summary is the sink's tally, for the run's report.
func (w *FencedSink) Summary() string {
	w.sink.mu.Lock()
	defer w.sink.mu.Unlock()
	return fmt.Sprintf("sink: %d acknowledged writes, %d stale fences refused", len(w.sink.acked), w.sink.refused)
}

func head(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}
