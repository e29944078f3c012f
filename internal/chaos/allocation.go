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
	"github.com/arbiterhq/arbiter/internal/clustertest"
	lin "github.com/arbiterhq/arbiter/internal/linearizability"
)

// Allocation is the workload of allocation conflict keys: clients create
// tasks one at a time and in windows of several proposals on a few keys
// per generation (title-fallback targets), withdraw tasks they won, and
// reserve and abort keys, so that winners, losers and freed keys
// alternate. Half the keys live in a space whose reservations expire
// after allocShortWindowMs of FSM time, so expiry happens under every
// fault too.
//
// Checks: the history per key against lin.AllocationModel (at most one
// live occupant, a loser names it, no phantom after an abort); no loser
// names a reservation that its client's replica already showed expired
// (FSM time only moves forward along the log, so that replica's time is
// a lower bound of the command's); every 201 read back on every replica;
// and in Verify, the change feed replayed index by index: no key ever
// taken while a live occupant held it, no reservation expired before its
// time (allocation_check.go).
type Allocation struct {
	mu       sync.Mutex
	reserved map[string]string // "space/proposal" -> target, of every reserve sent
	expiry   map[string]int64  // "space/proposal" -> expires_at_ms, of every reserve won
	phantoms []string          // losers naming a reservation already expired
	acked    int               // tasks acknowledged with a 201
}

// NewAllocation returns the allocation workload.
func NewAllocation() *Allocation { return &Allocation{} }

const (
	allocSpace         = "chaos"       // reservations outlive the run
	allocShortSpace    = "chaos-short" // reservations expire during it
	allocShortWindowMs = 300
	allocKeys          = 3 // keys per generation and space
	allocMode          = "result"
)

func (w *Allocation) Name() string                   { return "allocation" }
func (w *Allocation) Model() (porcupine.Model, bool) { return lin.AllocationModel(), true }

func (w *Allocation) Setup(ctx context.Context, c *clustertest.Cluster) error {
	w.mu.Lock()
	w.reserved, w.expiry, w.phantoms, w.acked = map[string]string{}, map[string]int64{}, nil, 0
	w.mu.Unlock()
	leader := c.Node(c.WaitLeader(timeout))
	svc := allocation.NewService(leader, leader)
	for _, sp := range []struct {
		slug   string
		window int64
	}{{allocSpace, allocation.MaxWindow.Milliseconds()}, {allocShortSpace, allocShortWindowMs}} {
		if _, err := svc.PutSpace(ctx, sp.slug, allocation.PutSpaceRequest{Catalog: []allocation.CatalogRow{}, WindowMs: sp.window}); err != nil {
			return err
		}
	}
	return nil
}

func (w *Allocation) Client(i int, seed uint64) Client {
	return &allocClient{w: w, id: i, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
}

// allocHolding is a task or reservation a client won and may release.
type allocHolding struct {
	space, title string
	holder       string // "task:N" or "res:P"
	generation   int
	id           uint64 // the task's; 0 for a reservation
}

type allocClient struct {
	w     *Allocation
	id    int
	rng   *rand.Rand
	steps int
	held  []allocHolding
}

// modelKey is a key's name in the model: its space and title.
func modelKey(space, title string) string { return space + "/" + title }

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
	space := allocSpace
	if c.rng.IntN(2) == 0 {
		space = allocShortSpace
	}
	title := func() string { return fmt.Sprintf("g%d-k%d", g, c.rng.IntN(allocKeys)) }
	switch p := c.rng.IntN(10); {
	case p < 3:
		c.create(svc, node, g, space, title(), rec)
	case p < 5:
		c.window(svc, node, g, space, title, rec)
	case p < 7 && len(c.held) > 0:
		k := c.rng.IntN(len(c.held))
		h := c.held[k]
		c.held = append(c.held[:k], c.held[k+1:]...)
		c.release(svc, h, rec)
	default:
		c.reserve(svc, node, g, space, title(), rec)
	}
}

func (c *allocClient) create(svc *allocation.Service, node *cluster.Node, g int, space, title string, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	in := lin.AllocInput{Kind: lin.AllocCreate, Key: modelKey(space, title), Expiring: space == allocShortSpace}
	floor := node.FSM().Now()
	call := rec.Call(c.id, in)
	res, err := svc.CreateTask(ctx, space, allocation.CreateTaskRequest{Title: title, DeliveryMode: allocMode})
	var lost *allocation.Conflict
	switch {
	case err == nil:
		c.won(res.Task, space, title, g, rec)
		call.Decided(lin.AllocOutput{Won: true, Holder: taskHolder(res.Task.ID)}, "create/won", true)
	case errors.As(err, &lost) && lost.Winner != nil:
		c.w.checkNotExpired(space, lost, floor)
		call.Decided(lin.AllocOutput{Holder: winnerName(lost)}, "create/lost", false)
	default:
		call.Failed(err, true)
	}
}

// won records a task the client created: it may withdraw it, and every
// replica must hold it.
func (c *allocClient) won(t allocation.Task, space, title string, g int, rec *Recorder) {
	c.w.mu.Lock()
	c.w.acked++
	c.w.mu.Unlock()
	c.held = append(c.held, allocHolding{space: space, title: title, holder: taskHolder(t.ID), generation: g, id: t.ID})
	rec.ReadBack(fmt.Sprintf("create of task %s/%d on %s", space, t.ID, t.ConflictKey.Target), readBackTask(t, false))
}

func taskHolder(id uint64) string { return fmt.Sprintf("task:%d", id) }

func winnerName(c *allocation.Conflict) string {
	if c.Winner.Type == allocation.WinnerReservedIntent {
		return "res:" + c.ReservedProposalID
	}
	return c.Winner.Type + ":" + c.Winner.ID.String()
}

func (c *allocClient) reserve(svc *allocation.Service, node *cluster.Node, g int, space, title string, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	pid := fmt.Sprintf("c%d-%d", c.id, c.steps)
	in := lin.AllocInput{Kind: lin.AllocReserve, Key: modelKey(space, title), Holder: "res:" + pid, Expiring: space == allocShortSpace}
	c.w.mu.Lock()
	c.w.reserved[space+"/"+pid] = allocation.NormalizeTitle(title)
	c.w.mu.Unlock()
	floor := node.FSM().Now()
	call := rec.Call(c.id, in)
	res, err := svc.Reserve(ctx, space, allocation.ReserveRequest{ProposalID: pid, Title: title, DeliveryMode: allocMode})
	var lost *allocation.Conflict
	switch {
	case err == nil:
		c.w.mu.Lock()
		c.w.expiry[space+"/"+pid] = res.Reservation.ExpiresAtMs
		c.w.mu.Unlock()
		c.held = append(c.held, allocHolding{space: space, title: title, holder: in.Holder, generation: g})
		call.Decided(lin.AllocOutput{Won: true, Holder: in.Holder}, "reserve/won", true)
	case errors.As(err, &lost) && lost.Winner != nil:
		c.w.checkNotExpired(space, lost, floor)
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
	in := lin.AllocInput{Kind: kind, Key: modelKey(h.space, h.title), Holder: h.holder, Expiring: h.space == allocShortSpace}
	call := rec.Call(c.id, in)
	var err error
	var withdrawn *allocation.TaskResult
	if kind == lin.AllocWithdraw {
		withdrawn, err = svc.Transition(ctx, h.space, h.id, allocation.TransitionRequest{Action: allocation.ActionWithdraw})
	} else {
		_, err = svc.Abort(ctx, h.space, h.holder[len("res:"):])
	}
	switch {
	case err == nil:
		if withdrawn != nil {
			rec.ReadBack(fmt.Sprintf("withdraw of task %s/%d", h.space, h.id), readBackTask(withdrawn.Task, true))
		}
		call.Decided(lin.AllocOutput{Won: true}, fmt.Sprintf("%v/applied", kind), true)
	case errors.Is(err, errs.Conflict) || errors.Is(err, errs.NotFound):
		// Already withdrawn, or a reservation expired and dropped.
		call.Decided(lin.AllocOutput{}, fmt.Sprintf("%v/not-held", kind), false)
	default:
		call.Failed(err, true)
	}
}

// checkNotExpired records a phantom when a loser names a reservation
// whose expiry the client's replica had already passed before the call:
// the command that lost was applied at that FSM time or later, when the
// reservation held nothing.
func (w *Allocation) checkNotExpired(space string, lost *allocation.Conflict, floor int64) {
	if lost.Winner.Type != allocation.WinnerReservedIntent {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if at, ok := w.expiry[space+"/"+lost.ReservedProposalID]; ok && floor >= at {
		w.phantoms = append(w.phantoms, fmt.Sprintf("a loser in %s names reservation %s, which expired at %d, at FSM time %d or later",
			space, lost.ReservedProposalID, at, floor))
	}
}

// Summary is the number of acknowledged creates.
func (w *Allocation) Summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d tasks acknowledged, %d reservations sent", w.acked, len(w.reserved))
}
