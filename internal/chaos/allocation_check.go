package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/fsm"
)

// Verify checks one replica's local state: no two live tasks share a
// key now; no client saw a loser name an expired reservation; and, by
// replaying the change feed in log order, no key was ever taken while a
// live occupant held it and no reservation was dropped as expired before
// its time.
func (w *Allocation) Verify(ctx context.Context, node *cluster.Node) error {
	svc := allocation.NewService(node, node)
	targets := map[string]string{} // "space/id" -> target, of every task
	var problems []error
	for _, space := range []string{allocSpace, allocShortSpace} {
		live := map[string]uint64{}
		err := eachTask(ctx, svc, space, func(t allocation.Task) {
			targets[space+"/"+strconv.FormatUint(t.ID, 10)] = t.ConflictKey.Target
			if !allocation.Live(t.Status) {
				return
			}
			if other, dup := live[t.ConflictKey.Target]; dup {
				problems = append(problems, fmt.Errorf("tasks %d and %d of %s are both live on %s", other, t.ID, space, t.ConflictKey.Target))
			}
			live[t.ConflictKey.Target] = t.ID
		})
		if err != nil {
			return err
		}
	}
	w.mu.Lock()
	for _, p := range w.phantoms {
		problems = append(problems, errors.New(p))
	}
	reserved := make(map[string]string, len(w.reserved))
	for k, v := range w.reserved {
		reserved[k] = v
	}
	w.mu.Unlock()
	events, err := allocationEvents(ctx, node)
	if err != nil {
		return err
	}
	problems = append(problems, replayOccupancy(events, targets, reserved)...)
	return errors.Join(problems...)
}

// eachTask calls f with every task of space in the replica's local state.
func eachTask(ctx context.Context, svc *allocation.Service, space string, f func(allocation.Task)) error {
	cursor := ""
	for pages := 0; pages < 1000; pages++ {
		page, err := svc.ListTasks(ctx, space, allocation.ListRequest{IncludeSuperseded: true, After: cursor, Limit: allocation.MaxPage}, fsm.Stale)
		if err != nil {
			return err
		}
		for _, t := range page.Tasks {
			f(t)
		}
		if cursor = page.NextCursor; cursor == "" {
			return nil
		}
	}
	return fmt.Errorf("more than 1000 pages of tasks in %s", space)
}

// allocationEvents is the replica's whole change feed, in log order,
// restricted to allocation events. It fails if the feed was pruned past
// the spaces' creation: the replay must start from an empty board.
func allocationEvents(ctx context.Context, node *cluster.Node) ([]fsm.Event, error) {
	out, err := feedEvents(ctx, node, func(e fsm.Event) bool { return strings.HasPrefix(e.Kind, "allocation_") })
	if err != nil {
		return nil, err
	}
	if len(out) == 0 || out[0].Kind != "allocation_space_put" {
		return nil, errors.New("the change feed does not start at the spaces' creation: it was pruned, and the run cannot be replayed")
	}
	return out, nil
}

// occupant is what holds a key in the replay: a task for good, or a
// reservation until expiresAt (FSM time).
type occupant struct {
	holder    string
	expiresAt int64 // 0: no expiry
}

// replayOccupancy steps through the allocation events in log order and
// reports every event that took a key while a live occupant held it,
// and every expiry before its time. targets names each task's key,
// reserved each reservation's; the spaces' windows give expiries.
func replayOccupancy(events []fsm.Event, targets, reserved map[string]string) []error {
	window := map[string]int64{allocSpace: allocation.MaxWindow.Milliseconds(), allocShortSpace: allocShortWindowMs}
	occ := map[string]occupant{} // "space\x00target" -> holder
	var problems []error
	bad := func(e fsm.Event, format string, args ...any) {
		if len(problems) < 10 {
			problems = append(problems, fmt.Errorf("index %d (%s %s at %d): %s", e.Index, e.Kind, e.Key, e.Time, fmt.Sprintf(format, args...)))
		}
	}
	take := func(e fsm.Event, key, holder string, expiresAt int64) {
		if o, held := occ[key]; held && (o.expiresAt == 0 || e.Time < o.expiresAt) {
			bad(e, "took the key while %s held it", o.holder)
		}
		occ[key] = occupant{holder: holder, expiresAt: expiresAt}
	}
	free := func(key, holder string) {
		if occ[key].holder == holder {
			delete(occ, key)
		}
	}
	for _, e := range events {
		space, id, _ := strings.Cut(e.Key, "/")
		task, res := "task:"+id, "res:"+id
		taskKey, resKey := space+"\x00"+targets[e.Key], space+"\x00"+reserved[e.Key]
		switch e.Kind {
		case "allocation_task_created", "allocation_task_reopen":
			if targets[e.Key] == "" {
				bad(e, "no such task in the replica's state")
				continue
			}
			take(e, taskKey, task, 0)
		case "allocation_task_withdraw", "allocation_task_reject", "allocation_task_done", "allocation_task_superseded":
			free(taskKey, task)
		case "allocation_reserved":
			if reserved[e.Key] == "" {
				bad(e, "a reservation no client sent")
				continue
			}
			take(e, resKey, res, e.Time+window[space])
		case "allocation_dropped":
			free(resKey, res)
		case "allocation_expired":
			if o := occ[resKey]; o.holder == res && e.Time < o.expiresAt {
				bad(e, "expired before its expiry %d", o.expiresAt)
			}
			free(resKey, res)
		}
	}
	return problems
}

// readBackTask checks that a replica holds the acknowledged task (the
// same create: same id, key and creation time), withdrawn if the
// acknowledged write withdrew it (nothing in the run reopens a task).
func readBackTask(acked allocation.Task, withdrawn bool) func(context.Context, *cluster.Node) error {
	return func(ctx context.Context, node *cluster.Node) error {
		got, err := allocation.NewService(node, node).GetTask(ctx, acked.Space, acked.ID, fsm.Stale)
		switch {
		case err != nil:
			return err
		case got.Task.ConflictKey != acked.ConflictKey || got.Task.CreatedAtMs != acked.CreatedAtMs:
			return fmt.Errorf("task %d is on %s, created at %d; acknowledged on %s, created at %d",
				acked.ID, got.Task.ConflictKey.Target, got.Task.CreatedAtMs, acked.ConflictKey.Target, acked.CreatedAtMs)
		case withdrawn && got.Task.Status != allocation.StatusWithdrawn:
			return fmt.Errorf("task %d is %s, acknowledged withdrawn", acked.ID, got.Task.Status)
		}
		return nil
	}
}
