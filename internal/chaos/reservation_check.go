package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/workitem"
)

// Verify checks one replica: what clients saw, the change feed replayed
// event by event, and the final state (see Reservations).
func (w *Reservations) Verify(ctx context.Context, node *cluster.Node) error {
	w.mu.Lock()
	problems := make([]error, 0, len(w.phantoms))
	for _, p := range w.phantoms {
		problems = append(problems, errors.New(p))
	}
	reserved := w.tally["reserve ok"]
	w.mu.Unlock()
	if reserved == 0 {
		problems = append(problems, errors.New("no reserve succeeded: the run tested nothing"))
	}
	events, err := workitemEvents(ctx, node)
	if err != nil {
		return err
	}
	problems = append(problems, replayReservations(events)...)
	problems = append(problems, w.verifyState(ctx, node)...)
	return errors.Join(problems...)
}

// workitemEvents is the replica's whole change feed of work-item events,
// in log order; it fails if the feed was pruned (the replay must start
// from an empty state).
func workitemEvents(ctx context.Context, node *cluster.Node) ([]fsm.Event, error) {
	return feedEvents(ctx, node, func(e fsm.Event) bool { return strings.HasPrefix(e.Kind, "workitem_") })
}

type rsClaim struct {
	attempt int64
	fence   uint64
}

// rsReplay is the state the feed's events build up.
type rsReplay struct {
	capacity map[string]workitem.Dimensions
	used     map[string]workitem.Dimensions
	active   map[string]workitem.ReservationEvent // by reservation id
	claims   map[string]rsClaim                   // tenant/item -> its current claim
	tenant   map[string]string                    // reservation id -> tenant
}

// replayReservations steps through the work-item events in log order and
// reports every event that breaks an invariant.
func replayReservations(events []fsm.Event) []error {
	st := &rsReplay{capacity: map[string]workitem.Dimensions{}, used: map[string]workitem.Dimensions{},
		active: map[string]workitem.ReservationEvent{}, claims: map[string]rsClaim{}, tenant: map[string]string{}}
	var problems []error
	for _, e := range events {
		if err := st.step(e); err != nil && len(problems) < 10 {
			problems = append(problems, fmt.Errorf("index %d (%s %s at %d): %w", e.Index, e.Kind, e.Key, e.Time, err))
		}
	}
	return problems
}

func (st *rsReplay) step(e fsm.Event) error {
	switch e.Kind {
	case workitem.EventHostPut:
		var h workitem.HostEvent
		if err := json.Unmarshal(e.Payload, &h); err != nil {
			return err
		}
		if over(h.Capacity, st.used[h.HostID]) {
			return fmt.Errorf("capacity %+v set below the use %+v", h.Capacity, st.used[h.HostID])
		}
		st.capacity[h.HostID] = h.Capacity
	case workitem.EventClaimed:
		var it workitem.OutboxEvent
		if err := json.Unmarshal(e.Payload, &it); err != nil {
			return err
		}
		key := e.Tenant + "/" + it.WorkItemID
		if st.activeOf(e.Tenant, it.WorkItemID) != "" {
			return fmt.Errorf("claimed while a reservation of an earlier claim is active")
		}
		st.claims[key] = rsClaim{it.Attempt, it.Fence}
	case workitem.EventRequeued, workitem.EventSucceeded, workitem.EventFailed, workitem.EventCancelled:
		var it workitem.OutboxEvent
		if err := json.Unmarshal(e.Payload, &it); err != nil {
			return err
		}
		delete(st.claims, e.Tenant+"/"+it.WorkItemID)
		if id := st.activeOf(e.Tenant, it.WorkItemID); id != "" {
			return fmt.Errorf("reservation %s survives the end of its claim", id)
		}
	case workitem.EventReserved:
		var r workitem.ReservationEvent
		if err := json.Unmarshal(e.Payload, &r); err != nil {
			return err
		}
		if c := st.claims[e.Tenant+"/"+r.WorkItemID]; c != (rsClaim{r.Attempt, r.Fence}) {
			return fmt.Errorf("reserved by attempt %d fence %d while the claim is %+v (a stale holder)", r.Attempt, r.Fence, c)
		}
		if r.FairnessDebtAfter < 0 {
			return fmt.Errorf("fairness debt %d", r.FairnessDebtAfter)
		}
		if err := st.conflicts(e.Tenant, r); err != nil {
			return err
		}
		st.used[r.HostID] = st.used[r.HostID].Add(r.Dimensions)
		if over(st.capacity[r.HostID], st.used[r.HostID]) {
			return fmt.Errorf("host %s uses %+v, above its capacity %+v", r.HostID, st.used[r.HostID], st.capacity[r.HostID])
		}
		st.active[r.ReservationID], st.tenant[r.ReservationID] = r, e.Tenant
	case workitem.EventReservationReleased, workitem.EventReservationEnded:
		var r workitem.ReservationEvent
		if err := json.Unmarshal(e.Payload, &r); err != nil {
			return err
		}
		if _, ok := st.active[r.ReservationID]; !ok {
			return fmt.Errorf("reservation %s ends, not being active", r.ReservationID)
		}
		if c := st.claims[e.Tenant+"/"+r.WorkItemID]; e.Kind == workitem.EventReservationReleased && c != (rsClaim{r.Attempt, r.Fence}) {
			return fmt.Errorf("released by attempt %d fence %d while the claim is %+v (a stale holder)", r.Attempt, r.Fence, c)
		}
		st.used[r.HostID] = st.used[r.HostID].Sub(r.Dimensions)
		delete(st.active, r.ReservationID)
	}
	return nil
}

// conflicts reports what r may not share with the active reservations
// of its tenant: an exclusive repository or branch, a concurrency key at
// its limit, an anti-affinity key on its host.
func (st *rsReplay) conflicts(tenant string, r workitem.ReservationEvent) error {
	conc := int64(1)
	for _, id := range sortedIDs(st.active) {
		o := st.active[id]
		if st.tenant[id] != tenant {
			continue
		}
		k, ok := o.Keys, r.Keys
		if k.Repository == ok.Repository && (k.RepositoryExclusive || ok.RepositoryExclusive) {
			return fmt.Errorf("repository %s shared with %s, one of them exclusive", k.Repository, id)
		}
		if k.Repository == ok.Repository && ok.Branch != "" && k.Branch == ok.Branch && (k.BranchExclusive || ok.BranchExclusive) {
			return fmt.Errorf("branch %s shared with %s, one of them exclusive", k.Branch, id)
		}
		if k.Concurrency == ok.Concurrency {
			conc++
			if k.ConcurrencyLimit != ok.ConcurrencyLimit {
				return fmt.Errorf("concurrency key %s held under limits %d and %d", k.Concurrency, k.ConcurrencyLimit, ok.ConcurrencyLimit)
			}
		}
		if o.HostID == r.HostID {
			for _, a := range ok.AntiAffinity {
				if slices.Contains(k.AntiAffinity, a) {
					return fmt.Errorf("anti-affinity key %s shared on host %s with %s", a, r.HostID, id)
				}
			}
		}
	}
	if conc > r.Keys.ConcurrencyLimit {
		return fmt.Errorf("concurrency key %s has %d active reservations, above its limit %d", r.Keys.Concurrency, conc, r.Keys.ConcurrencyLimit)
	}
	return nil
}

func (st *rsReplay) activeOf(tenant, item string) string {
	for _, id := range sortedIDs(st.active) {
		if st.tenant[id] == tenant && st.active[id].WorkItemID == item {
			return id
		}
	}
	return ""
}

func sortedIDs(m map[string]workitem.ReservationEvent) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func over(capacity, used workitem.Dimensions) bool {
	d := capacity.Sub(used)
	return d.CPUMillis < 0 || d.MemoryMiB < 0 || d.DiskMiB < 0 || d.Processes < 0
}

// verifyState checks the replica's final state: every host's use is the
// sum of its active reservations, each of which is its item's current
// claim's; no debt is negative.
//
// The scan takes many queries while the cluster keeps ticking, and a tick
// that expires a reservation between two of them would make a sound state
// look inconsistent; so the scan counts only when the replica's content
// hash is the same before and after it (a tick that expires nothing
// leaves the content hash as it was).
func (w *Reservations) verifyState(ctx context.Context, node *cluster.Node) []error {
	const attempts = 20
	var problems []error
	for attempt := 0; attempt < attempts; attempt++ {
		before, err := node.ContentHash()
		if err != nil {
			return []error{err}
		}
		problems = w.scanState(ctx, node)
		after, err := node.ContentHash()
		if err != nil {
			return []error{err}
		}
		if before == after {
			return problems
		}
	}
	return append(problems, fmt.Errorf("the state changed during each of %d scans: the check is inconclusive", attempts))
}

// scanState is one scan of verifyState.
func (w *Reservations) scanState(ctx context.Context, node *cluster.Node) []error {
	svc := workitem.NewService(node, node)
	var problems []error
	used := map[string]workitem.Dimensions{}
	var hosts []workitem.HostStatus
	for g := 0; g < MaxGenerations(len(Faults)); g++ {
		tenant := rsTenant(g)
		cursor := ""
		for pages := 0; ; pages++ {
			q, err := svc.Query(ctx, workitem.QueryRequest{TenantRef: tenant, MaxCount: workitem.MaxQueryPage, Cursor: cursor}, fsm.Stale)
			if err != nil || pages > 1000 {
				return append(problems, fmt.Errorf("query %s: %v", tenant, err))
			}
			for _, r := range q.Reservations {
				if r.Status != workitem.ReservationActive {
					continue
				}
				used[r.HostID] = used[r.HostID].Add(r.Dimensions)
				it, err := svc.Get(ctx, workitem.GetRequest{TenantRef: tenant, WorkItemID: r.WorkItemID}, fsm.Stale)
				if err != nil || it.WorkItem.Status != workitem.StatusClaimed || it.WorkItem.Attempt != r.Attempt || it.WorkItem.Fence != r.Fence {
					problems = append(problems, fmt.Errorf("active reservation %s outlives its claim (%v)", r.ReservationID, err))
				}
			}
			if g == 0 {
				hosts = append(hosts, q.Hosts...)
			}
			for _, d := range q.Fairness {
				if d.DebtMilli < 0 {
					problems = append(problems, fmt.Errorf("fairness debt of %s/%s is %d", tenant, d.Group, d.DebtMilli))
				}
			}
			if cursor = q.NextCursor; cursor == "" {
				break
			}
		}
	}
	for _, h := range hosts {
		if h.Used != used[h.HostID] || over(h.Capacity, h.Used) {
			problems = append(problems, fmt.Errorf("host %s uses %+v of %+v; its active reservations add up to %+v", h.HostID, h.Used, h.Capacity, used[h.HostID]))
		}
	}
	if len(hosts) != rsHosts {
		problems = append(problems, fmt.Errorf("%d hosts, want %d", len(hosts), rsHosts))
	}
	return problems
}
