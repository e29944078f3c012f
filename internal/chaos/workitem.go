package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	lin "github.com/arbiterhq/arbiter/internal/linearizability"
	"github.com/arbiterhq/arbiter/workitem"
)

// WorkItems is the workload of work-item admission: clients submit items
// under idempotency keys they share (client i draws keys from the same
// small pool as the others, so concurrent submits of one key race and
// all but one replay), now and then a different request under a used key
// (idempotency_conflict), with dependencies and small in-flight caps, so
// that admissions and exhaustion alternate; they claim, complete (with
// the fence they hold, or a stale one on purpose), cancel and list.
//
// Each generation has its own tenants (the model's partitions: in-flight
// counts are per tenant), so each tenant's history spans one fault
// boundary. Claims last an hour: expiry is not part of a run. Which keys
// each tenant has used, and which admissions were acknowledged, are
// shared by every client, so they live in the workload: make one with
// NewWorkItems.
type WorkItems struct {
	mu    sync.Mutex
	next  map[string]int      // tenant -> the next fresh key number
	acked map[string]ackedWI  // tenant/id -> an acknowledged admission
	ids   map[string][]string // tenant -> ids some submit named
}

type ackedWI struct {
	tenant, id string
	seq        uint64
}

// NewWorkItems returns the work-item workload.
func NewWorkItems() *WorkItems {
	w := &WorkItems{}
	w.reset()
	return w
}

const (
	wiTenantsPerGeneration = 4
	// wiCeiling is the largest in-flight cap a request names.
	wiCeiling = 8
)

var wiCaps = []int64{3, 5, wiCeiling}

// wiGenerations is how many generations of tenants a run has.
var wiGenerations = MaxGenerations(len(Faults))

func wiTenant(g, k int) string { return fmt.Sprintf("wi-g%d-%d", g, k) }

func (w *WorkItems) Name() string { return "workitem" }

// Model is partitioned by tenant.
func (w *WorkItems) Model() (porcupine.Model, bool) { return lin.WorkItemModel(), true }

// Setup forgets what an earlier run of the same workload value did.
func (w *WorkItems) Setup(context.Context, *clustertest.Cluster) error {
	w.reset()
	return nil
}

// FaultsPerRun keeps the suite's time: a TestFaults run injects this many
// of the fault kinds, a seeded selection (soaks inject any).
func (w *WorkItems) FaultsPerRun() int { return 6 }

func (w *WorkItems) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next, w.acked, w.ids = map[string]int{}, map[string]ackedWI{}, map[string][]string{}
}

// key picks a key number of tenant: mostly a fresh one, now and then one
// used before (a replay, or a conflict when variant is set).
func (w *WorkItems) key(tenant string, rng *rand.Rand) (n int, reuse bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if used := w.next[tenant]; used > 0 && rng.IntN(10) < 3 {
		return max(0, used-1-rng.IntN(4)), true
	}
	n = w.next[tenant]
	w.next[tenant]++
	w.ids[tenant] = append(w.ids[tenant], wiID(n))
	return n, false
}

func (w *WorkItems) knownID(tenant string, rng *rand.Rand) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := w.ids[tenant]
	if len(ids) == 0 {
		return "i-none"
	}
	return ids[rng.IntN(len(ids))]
}

func (w *WorkItems) ack(tenant, id string, seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.acked[tenant+"/"+id] = ackedWI{tenant: tenant, id: id, seq: seq}
}

func wiID(n int) string { return fmt.Sprintf("i%d", n) }

// wiRequest is the request under key number n of tenant (variant 1:
// another request under the same key). Items n = 2 mod 3 depend on item
// n-1, which has no dependency of its own.
func wiRequest(tenant string, n, variant int) (lin.WIInput, workitem.SubmitRequest) {
	in := lin.WIInput{Kind: lin.WISubmit, Tenant: tenant, Key: fmt.Sprintf("k%d", n), Variant: variant, ID: wiID(n),
		Priority: int64(n%3 - 1 + 5*variant), Cap: wiCaps[(n/3)%len(wiCaps)]}
	if n%3 == 2 {
		in.Dep = wiID(n - 1)
	}
	r := workitem.SubmitRequest{TenantRef: tenant, WorkItemID: in.ID, IdempotencyKey: in.Key, CommandDigest: "sha256:" + strings.Repeat("c", 64),
		Kind: "chaos", Priority: in.Priority, InputRef: "in", PolicyDigest: "sha256:" + strings.Repeat("1", 64), CatalogDigest: "sha256:" + strings.Repeat("2", 64), ModelDigest: "sha256:" + strings.Repeat("3", 64),
		MaxAttempts: 3, MaxTenantInFlight: in.Cap}
	if in.Dep != "" {
		r.DependsOn = []string{in.Dep}
	}
	return in, r
}

func (w *WorkItems) Client(i int, seed uint64) Client {
	return &wiClient{w: w, id: i, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
}

// wiHolding is a claim a client holds (or held: a stale token).
type wiHolding struct {
	tenant, id string
	generation int
	attempt    int64
	fence      uint64
}

type wiClient struct {
	w               *WorkItems
	id              int
	rng             *rand.Rand
	holdings, stale []wiHolding
}

func (c *wiClient) Step(node *cluster.Node, rec *Recorder) {
	g := rec.Generation(c.rng)
	c.forgetBefore(g - 1)
	svc := workitem.NewService(node, node)
	tenant := wiTenant(g, c.rng.IntN(wiTenantsPerGeneration))
	mine := wiOf(c.holdings, g)
	switch p := c.rng.IntN(100); {
	case p < 40:
		c.submit(svc, tenant, rec)
	case p < 62:
		c.claim(svc, tenant, g, rec)
	case p < 82 && len(mine) > 0:
		k := mine[c.rng.IntN(len(mine))]
		h := c.holdings[k]
		c.holdings = append(c.holdings[:k], c.holdings[k+1:]...)
		c.complete(svc, h, rec)
		c.stale = append(c.stale, h)
	case p < 86:
		if stale := wiOf(c.stale, g); len(stale) > 0 {
			h := c.stale[stale[c.rng.IntN(len(stale))]]
			if c.rng.IntN(2) == 0 {
				h.fence--
			}
			c.complete(svc, h, rec)
			break
		}
		c.list(svc, tenant, rec)
	case p < 92:
		c.cancel(svc, tenant, c.w.knownID(tenant, c.rng), rec)
	default:
		c.list(svc, tenant, rec)
	}
	if len(c.stale) > 8 {
		c.stale = c.stale[len(c.stale)-8:]
	}
}

func (c *wiClient) forgetBefore(g int) {
	keep := func(hs []wiHolding) []wiHolding {
		out := hs[:0]
		for _, h := range hs {
			if h.generation >= g {
				out = append(out, h)
			}
		}
		return out
	}
	c.holdings, c.stale = keep(c.holdings), keep(c.stale)
}

func wiOf(hs []wiHolding, g int) []int {
	var out []int
	for k, h := range hs {
		if h.generation == g {
			out = append(out, k)
		}
	}
	return out
}

func (c *wiClient) submit(svc *workitem.Service, tenant string, rec *Recorder) {
	n, reuse := c.w.key(tenant, c.rng)
	variant := 0
	if reuse && c.rng.IntN(5) == 0 {
		variant = 1
	}
	in, r := wiRequest(tenant, n, variant)
	ctx, cancel := rec.OpContext()
	defer cancel()
	call := rec.Call(c.id, in)
	res, err := svc.Submit(ctx, r)
	if err == nil {
		out := lin.WIOutput{Decision: lin.WIOK, Seq: res.CommandSequence, InFlight: res.Quota.InFlight}
		if res.Replayed {
			out.Decision = lin.WIReplayed
		}
		c.w.ack(tenant, res.WorkItemID, res.CommandSequence)
		rec.ReadBack(fmt.Sprintf("admission of %s/%s (sequence %d)", tenant, res.WorkItemID, res.CommandSequence),
			readBackWorkItem(tenant, res.WorkItemID, func(it workitem.WorkItem) bool { return it.CommandSequence == res.CommandSequence }))
		call.Decided(out, "submit/"+out.Decision, !res.Replayed)
		return
	}
	e := errs.From(err)
	switch e.Code {
	case errs.CodeExhausted, errs.CodeConflict, errs.CodeIdempotencyConflict:
		call.Decided(lin.WIOutput{Decision: string(e.Code)}, "submit/"+string(e.Code), false)
	case errs.CodeInvalid:
		reason, _ := e.Detail["reason"].(string)
		if reason != lin.WIDependencyMissing && reason != lin.WIDependencyFailed {
			call.Unexpected(fmt.Sprintf("submit refused: %v", err))
			return
		}
		call.Decided(lin.WIOutput{Decision: reason}, "submit/"+reason, false)
	default:
		call.Failed(err, true)
	}
}

func (c *wiClient) claim(svc *workitem.Service, tenant string, g int, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	in := lin.WIInput{Kind: lin.WIClaim, Tenant: tenant}
	call := rec.Call(c.id, in)
	res, err := svc.Claim(ctx, workitem.ClaimRequest{TenantRef: tenant, OwnerRef: fmt.Sprintf("client-%d", c.id), TTLMs: 3_600_000})
	switch {
	case err == nil:
		c.holdings = append(c.holdings, wiHolding{tenant: tenant, id: res.WorkItem.WorkItemID, generation: g, attempt: res.Attempt, fence: res.Fence})
		rec.ReadBack(fmt.Sprintf("claim of %s/%s (attempt %d)", tenant, res.WorkItem.WorkItemID, res.Attempt),
			readBackWorkItem(tenant, res.WorkItem.WorkItemID, func(it workitem.WorkItem) bool { return it.Attempt >= res.Attempt }))
		call.Decided(lin.WIOutput{Decision: lin.WIOK, ID: res.WorkItem.WorkItemID, Attempt: res.Attempt, Fence: res.Fence}, "claim/ok", true)
	case errors.Is(err, errs.NotFound):
		call.Decided(lin.WIOutput{Decision: lin.WINotFound}, "claim/not_found", false)
	default:
		call.Failed(err, true)
	}
}

func (c *wiClient) complete(svc *workitem.Service, h wiHolding, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	in := lin.WIInput{Kind: lin.WIComplete, Tenant: h.tenant, ID: h.id, Attempt: h.attempt, Fence: h.fence}
	call := rec.Call(c.id, in)
	_, err := svc.Complete(ctx, workitem.CompleteRequest{TenantRef: h.tenant, WorkItemID: h.id, Attempt: h.attempt, Fence: h.fence,
		Outcome: workitem.StatusSucceeded})
	switch code := errs.CodeOf(err); code {
	case "":
		rec.ReadBack(fmt.Sprintf("completion of %s/%s (attempt %d)", h.tenant, h.id, h.attempt),
			readBackWorkItem(h.tenant, h.id, func(it workitem.WorkItem) bool {
				return it.Status == workitem.StatusSucceeded && it.Attempt == h.attempt
			}))
		call.Decided(lin.WIOutput{Decision: lin.WIOK}, "complete/ok", true)
	case errs.CodeStaleFence, errs.CodeConflict, errs.CodeNotFound:
		call.Decided(lin.WIOutput{Decision: string(code)}, "complete/"+string(code), false)
	default:
		call.Failed(err, true)
	}
}

func (c *wiClient) cancel(svc *workitem.Service, tenant, id string, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	in := lin.WIInput{Kind: lin.WICancel, Tenant: tenant, ID: id}
	call := rec.Call(c.id, in)
	_, err := svc.Cancel(ctx, workitem.CancelRequest{TenantRef: tenant, WorkItemID: id, Reason: "chaos"})
	switch code := errs.CodeOf(err); code {
	case "":
		rec.ReadBack(fmt.Sprintf("cancellation of %s/%s", tenant, id),
			readBackWorkItem(tenant, id, func(it workitem.WorkItem) bool { return it.Status == workitem.StatusCancelled }))
		call.Decided(lin.WIOutput{Decision: lin.WIOK}, "cancel/ok", true)
	case errs.CodeConflict, errs.CodeNotFound:
		call.Decided(lin.WIOutput{Decision: string(code)}, "cancel/"+string(code), false)
	default:
		call.Failed(err, true)
	}
}

func (c *wiClient) list(svc *workitem.Service, tenant string, rec *Recorder) {
	ctx, cancel := rec.OpContext()
	defer cancel()
	in := lin.WIInput{Kind: lin.WIList, Tenant: tenant}
	call := rec.Call(c.id, in)
	page, err := svc.List(ctx, workitem.ListRequest{TenantRef: tenant, Limit: workitem.MaxPage}, fsm.Linearizable)
	switch {
	case err != nil:
		call.Failed(err, false)
	default: // the first page: the model lists the first workitem.MaxPage items
		call.Decided(lin.WIOutput{List: wiListOf(page.WorkItems)}, "list/ok", false)
	}
}

// wiListOf is a page of items as the model's list spells it.
func wiListOf(items []workitem.Summary) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = fmt.Sprintf("%s:%s:%d:%t", it.WorkItemID, it.Status, it.Attempt, it.Dependencies.Satisfied == it.Dependencies.Total)
	}
	return strings.Join(parts, ";")
}

// Verify reads node's local state and requires, for every tenant of every
// generation: command sequences 1, 2, ... n with none allocated twice or
// skipped; in flight (pending + claimed) within the largest cap any
// request named; every acknowledged admission present with the sequence
// it was acknowledged with.
func (w *WorkItems) Verify(ctx context.Context, node *cluster.Node) error {
	svc := workitem.NewService(node, node)
	w.mu.Lock()
	acked := make([]ackedWI, 0, len(w.acked))
	for _, a := range w.acked {
		acked = append(acked, a)
	}
	w.mu.Unlock()
	sort.Slice(acked, func(i, j int) bool { return acked[i].tenant+acked[i].id < acked[j].tenant+acked[j].id })
	var problems []error
	seqs := map[string]map[string]uint64{}
	for g := 0; g < wiGenerations; g++ {
		for k := 0; k < wiTenantsPerGeneration; k++ {
			tenant := wiTenant(g, k)
			items, err := wiItems(ctx, svc, tenant)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			seqs[tenant] = map[string]uint64{}
			var flying int64
			for i, it := range items {
				if it.CommandSequence != uint64(i+1) {
					problems = append(problems, fmt.Errorf("tenant %s: item %d of the list has sequence %d (allocated twice or skipped)", tenant, i+1, it.CommandSequence))
				}
				if it.Status == workitem.StatusPending || it.Status == workitem.StatusClaimed {
					flying++
				}
				seqs[tenant][it.WorkItemID] = it.CommandSequence
			}
			if flying > wiCeiling {
				problems = append(problems, fmt.Errorf("tenant %s has %d items in flight, above every cap (%d)", tenant, flying, wiCeiling))
			}
		}
	}
	for _, a := range acked {
		if got, ok := seqs[a.tenant][a.id]; !ok || got != a.seq {
			problems = append(problems, fmt.Errorf("acknowledged item %s/%s (sequence %d) is missing or moved (found %t at %d)", a.tenant, a.id, a.seq, ok, got))
		}
	}
	return errors.Join(problems...)
}

// readBackWorkItem checks that a replica holds item tenant/id in a state
// ok accepts: the acknowledged write's, or one only a later write makes.
func readBackWorkItem(tenant, id string, ok func(workitem.WorkItem) bool) func(context.Context, *cluster.Node) error {
	return func(ctx context.Context, node *cluster.Node) error {
		got, err := workitem.NewService(node, node).Get(ctx, workitem.GetRequest{TenantRef: tenant, WorkItemID: id}, fsm.Stale)
		switch {
		case err != nil:
			return err
		case !ok(got.WorkItem):
			return fmt.Errorf("item is %s at attempt %d, sequence %d", got.WorkItem.Status, got.WorkItem.Attempt, got.WorkItem.CommandSequence)
		}
		return nil
	}
}

func wiItems(ctx context.Context, svc *workitem.Service, tenant string) ([]workitem.Summary, error) {
	var out []workitem.Summary
	after := ""
	for pages := 0; pages < 100; pages++ {
		page, err := svc.List(ctx, workitem.ListRequest{TenantRef: tenant, After: after}, fsm.Stale)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", tenant, err)
		}
		out = append(out, page.WorkItems...)
		if after = page.NextCursor; after == "" {
			return out, nil
		}
	}
	return nil, fmt.Errorf("list of %s does not end within 100 pages", tenant)
}

// Summary tallies what the run admitted.
func (w *WorkItems) Summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d acknowledged admissions", len(w.acked))
}
