package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	lin "github.com/arbiterhq/arbiter/internal/linearizability"
)

// Allocation is the workload of allocation conflict keys: clients create
// tasks on a few keys per generation (title-fallback targets), withdraw
// tasks they won, and reserve and abort keys, so that winners, losers and
// freed keys alternate. The history is checked per key (at most one live
// occupant, a loser names it, no phantom after an abort); Verify checks
// on every replica that no two live tasks share a key and that every
// acknowledged 201 is there, on its key.
type Allocation struct {
	mu    sync.Mutex
	acked map[uint64]string // task id -> target, of every 201
}

// NewAllocation returns the allocation workload.
func NewAllocation() *Allocation { return &Allocation{acked: map[uint64]string{}} }

const (
	allocSpace = "chaos"
	allocKeys  = 3 // keys per generation
)

func (w *Allocation) Name() string                   { return "allocation" }
func (w *Allocation) Model() (porcupine.Model, bool) { return lin.AllocationModel(), true }

func (w *Allocation) Setup(ctx context.Context, c *clustertest.Cluster) error {
	w.mu.Lock()
	w.acked = map[uint64]string{}
	w.mu.Unlock()
	leader := c.Node(c.WaitLeader(timeout))
	_, err := allocation.NewService(leader, leader).PutSpace(ctx, allocSpace, allocation.PutSpaceRequest{Catalog: []allocation.CatalogRow{}, WindowMs: allocation.MaxWindow.Milliseconds()})
	return err
}

func (w *Allocation) Client(i int, seed uint64) Client {
	return &allocClient{w: w, id: i, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
}

type allocHolding struct {
	key, holder string // holder "task:N" or "res:P"
	generation  int
	id          uint64
}

type allocClient struct {
	w     *Allocation
	id    int
	rng   *rand.Rand
	steps int
	held  []allocHolding
}

func allocTitle(key string) string { return key }

func (c *allocClient) Step(node *cluster.Node, rec *Recorder) {
	c.steps++
	g := rec.Generation(c.rng)
	keep := c.held[:0]
	for _, h := range c.held {
		if h.generation >= g-1 {
			keep = append(keep, h)
		}
	}
	c.held = keep
	svc := allocation.NewService(node, node)
	key := fmt.Sprintf("g%d-k%d", g, c.rng.IntN(allocKeys))
	var mine []int
	for k, h := range c.held {
		if h.generation == g {
			mine = append(mine, k)
		}
	}
	switch p := c.rng.IntN(10); {
	case p < 4 || len(mine) == 0 && p < 7:
		c.create(svc, g, key, rec)
	case p < 7:
		k := mine[c.rng.IntN(len(mine))]
		h := c.held[k]
		c.held = append(c.held[:k], c.held[k+1:]...)
		c.release(svc, h, rec)
	default:
		c.reserve(svc, g, key, rec)
	}
}

func (c *allocClient) create(svc *allocation.Service, g int, key string, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	in := lin.AllocInput{Kind: lin.AllocCreate, Key: key}
	call := rec.Call(c.id, in)
	res, err := svc.CreateTask(ctx, allocSpace, allocation.CreateTaskRequest{Title: allocTitle(key), DeliveryMode: "result"})
	var lost *allocation.Conflict
	switch {
	case err == nil:
		holder := fmt.Sprintf("task:%d", res.Task.ID)
		c.w.mu.Lock()
		c.w.acked[res.Task.ID] = res.Task.ConflictKey.Target
		c.w.mu.Unlock()
		c.held = append(c.held, allocHolding{key: key, holder: holder, generation: g, id: res.Task.ID})
		call.Decided(lin.AllocOutput{Won: true, Holder: holder}, "create/won", true)
		rec.ReadBack("task "+holder, readBackTask(res.Task.ID, ""))
	case errors.As(err, &lost) && lost.Winner != nil:
		call.Decided(lin.AllocOutput{Holder: winnerName(lost)}, "create/lost", false)
	default:
		call.Failed(err, true)
	}
}

func winnerName(c *allocation.Conflict) string {
	if c.Winner.Type == allocation.WinnerReservedIntent {
		return "res:" + c.ReservedProposalID
	}
	return c.Winner.Type + ":" + c.Winner.ID.String()
}

func (c *allocClient) reserve(svc *allocation.Service, g int, key string, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	pid := fmt.Sprintf("c%d-%d", c.id, c.steps)
	in := lin.AllocInput{Kind: lin.AllocReserve, Key: key, Holder: "res:" + pid}
	call := rec.Call(c.id, in)
	_, err := svc.Reserve(ctx, allocSpace, allocation.ReserveRequest{ProposalID: pid, Title: allocTitle(key), DeliveryMode: "result"})
	var lost *allocation.Conflict
	switch {
	case err == nil:
		c.held = append(c.held, allocHolding{key: key, holder: in.Holder, generation: g})
		call.Decided(lin.AllocOutput{Won: true, Holder: in.Holder}, "reserve/won", true)
	case errors.As(err, &lost) && lost.Winner != nil:
		call.Decided(lin.AllocOutput{Holder: winnerName(lost)}, "reserve/lost", false)
	default:
		call.Failed(err, true)
	}
}

// release withdraws a task the client won, or aborts its reservation.
func (c *allocClient) release(svc *allocation.Service, h allocHolding, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	kind := lin.AllocWithdraw
	if h.id == 0 {
		kind = lin.AllocAbort
	}
	in := lin.AllocInput{Kind: kind, Key: h.key, Holder: h.holder}
	call := rec.Call(c.id, in)
	var err error
	if kind == lin.AllocWithdraw {
		_, err = svc.Transition(ctx, allocSpace, h.id, allocation.TransitionRequest{Action: allocation.ActionWithdraw})
	} else {
		_, err = svc.Abort(ctx, allocSpace, h.holder[len("res:"):])
	}
	switch {
	case err == nil:
		call.Decided(lin.AllocOutput{Won: true}, fmt.Sprintf("%v/applied", kind), true)
		if kind == lin.AllocWithdraw {
			rec.ReadBack("withdrawal of "+h.holder, readBackTask(h.id, allocation.StatusWithdrawn))
		}
	case errors.Is(err, errs.Conflict) || errors.Is(err, errs.NotFound):
		// Already withdrawn or dropped (a retry of an unknown outcome).
		call.Decided(lin.AllocOutput{}, fmt.Sprintf("%v/not-held", kind), false)
	default:
		call.Failed(err, true)
	}
}

// Verify reads every task of the run from node's local state: no two
// live tasks share a key, and every acknowledged 201 is there on its key.
func (w *Allocation) Verify(ctx context.Context, node *cluster.Node) error {
	svc := allocation.NewService(node, node)
	live := map[string]uint64{}
	seen := map[uint64]string{}
	var problems []error
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			return fmt.Errorf("more than 1000 pages of tasks")
		}
		page, err := svc.ListTasks(ctx, allocSpace, allocation.ListRequest{IncludeSuperseded: true, After: cursor, Limit: allocation.MaxPage}, fsm.Stale)
		if err != nil {
			return err
		}
		for _, t := range page.Tasks {
			seen[t.ID] = t.ConflictKey.Target
			if !allocation.Live(t.Status) {
				continue
			}
			if other, dup := live[t.ConflictKey.Target]; dup {
				problems = append(problems, fmt.Errorf("tasks %d and %d are both live on %s", other, t.ID, t.ConflictKey.Target))
			}
			live[t.ConflictKey.Target] = t.ID
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, target := range w.acked {
		if seen[id] != target {
			problems = append(problems, fmt.Errorf("acknowledged task %d on %s is %q here", id, target, seen[id]))
		}
	}
	return errors.Join(problems...)
}

// Summary is the number of acknowledged creates.
func (w *Allocation) Summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d tasks acknowledged", len(w.acked))
}

// readBackTask checks that a replica holds task id (in status, if given).
func readBackTask(id uint64, status string) func(context.Context, *cluster.Node) error {
	return func(ctx context.Context, node *cluster.Node) error {
		got, err := allocation.NewService(node, node).GetTask(ctx, allocSpace, id, fsm.Stale)
		switch {
		case err != nil:
			return err
		case status != "" && string(got.Task.Status) != status:
			return fmt.Errorf("task %d is %s, acknowledged %s", id, got.Task.Status, status)
		}
		return nil
	}
}
