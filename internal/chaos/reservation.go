package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/anishathalye/porcupine"
	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// Reservations is the workload of host resource reservation: clients
// submit items with a resource_reservation record (a shared repository,
// an exclusive one, an exclusive branch, anti-affinity, concurrency keys
// of limits 2 to 4), claim them for 1.5-4 s (so claims expire and Tick ends
// their reservations during the run), reserve on three small shared
// hosts (named or picked), release, complete, report telemetry, query,
// and now and then act as a stale holder (an ended claim, or a fence
// below the claim's). It checks itself (Model is not used): Verify
// replays the replica's change feed event by event and requires that a
// host's use never exceeds its capacity in any dimension; at most one
// active reservation per exclusive repository and exclusive branch, never
// beside shared ones; a concurrency key never above its limit; no two
// reservations of a tenant sharing an anti-affinity key on a host; no
// reservation surviving its claim's end (the item's end event finds none
// active); every reserve and release made by the item's current claim;
// fairness debts never negative. The final state must agree (use equal to
// the active reservations, each on a current claim), no client may have
// seen a stale holder succeed, and every acknowledged reserve, release and
// host write is read back on every replica.
type Reservations struct {
	mu       sync.Mutex
	records  []json.RawMessage // sealed extensions, one per kind
	items    atomic.Int64
	seqs     [rsHosts]atomic.Uint64 // the last report_seq sent per host
	tally    map[string]int
	phantoms []string
}

// NewReservations returns the workload.
func NewReservations() *Reservations { return &Reservations{tally: map[string]int{}} }

const rsHosts = 3

func rsHost(k int) string { return fmt.Sprintf("rs-h%d", k) }

func rsTenant(g int) string { return fmt.Sprintf("rs-g%d", g) }

// rsCapacity is every host's: about four average reservations.
var rsCapacity = workitem.Dimensions{CPUMillis: 6000, MemoryMiB: 16384, DiskMiB: 60000, Processes: 5}

func (w *Reservations) Name() string { return "reservation" }

// Model: the workload checks itself in Verify.
func (w *Reservations) Model() (porcupine.Model, bool) { return porcupine.Model{}, false }

// FaultsPerRun keeps the suite's time (a seeded selection of the kinds).
func (w *Reservations) FaultsPerRun() int { return 6 }

// Setup loads the profile and registers the hosts, and seals the
// records clients admit items with.
func (w *Reservations) Setup(ctx context.Context, c *clustertest.Cluster) error {
	w.mu.Lock()
	w.tally, w.phantoms, w.records = map[string]int{}, nil, nil
	w.mu.Unlock()
	w.items.Store(0)
	leader := c.Node(c.WaitLeader(timeout))
	s := workitem.NewService(leader, leader)
	p := workitem.Profile{Name: "chaos", Version: "1", Weights: workitem.Weights{CPU: 1, Memory: 1, Disk: 1, Process: 1},
		Max:      workitem.Dimensions{CPUMillis: 4000, MemoryMiB: 8192, DiskMiB: 60000, Processes: 4},
		Fairness: workitem.FairnessPolicy{MaxDebt: 20, DecayPerS: 5}, Disk: workitem.DiskPolicy{MinFreeMiB: 100},
		TelemetryMaxAgeMs: 600_000, Mode: workitem.ModeEnabled}
	if _, err := s.SetProfiles(ctx, workitem.ProfilesRequest{Profiles: []workitem.Profile{p}}); err != nil {
		return err
	}
	for k := range rsHosts {
		if _, err := s.PutHost(ctx, workitem.PutHostRequest{HostID: rsHost(k), Labels: map[string]string{"pool": "chaos"}, Capacity: rsCapacity}); err != nil {
			return err
		}
		w.seqs[k].Store(1)
		if _, err := s.ReportTelemetry(ctx, workitem.TelemetryRequest{HostID: rsHost(k), ReportSeq: 1, DiskFreeMiB: 1 << 20}); err != nil {
			return err
		}
	}
	base := func() extension.Extension {
		return extension.Extension{Profile: extension.ProfileRef{Name: "chaos", Version: "1"},
			Dimensions:  workitem.Dimensions{CPUMillis: 1000, MemoryMiB: 2048, DiskMiB: 10000, Processes: 1},
			Concurrency: extension.Concurrency{Key: "c", Limit: 3}, Repository: "R1", BaseRef: "main",
			Fairness: extension.Fairness{Group: "team", Cost: 1}, HostLabels: map[string]string{"pool": "chaos"}}
	}
	kinds := []func(*extension.Extension){
		func(*extension.Extension) {},
		func(e *extension.Extension) {
			e.Exclusivity.Repository, e.Concurrency = true, extension.Concurrency{Key: "x", Limit: 2}
		},
		func(e *extension.Extension) {
			e.Branch, e.Exclusivity.Branch, e.Concurrency = "feature", true, extension.Concurrency{Key: "x", Limit: 2}
		},
		func(e *extension.Extension) {
			e.Repository, e.AntiAffinity, e.Dimensions.CPUMillis, e.Concurrency = "R2", []string{"gpu"}, 2000, extension.Concurrency{Key: "g", Limit: 4}
		},
		func(e *extension.Extension) {
			e.Repository, e.BaseRef, e.Dimensions.CPUMillis, e.Fairness.Cost = "R3", "dev", 1500, 2
		},
	}
	var records []json.RawMessage
	for _, k := range kinds {
		e := base()
		k(&e)
		_, raw, err := extension.Seal(e)
		if err != nil {
			return err
		}
		records = append(records, raw)
	}
	w.mu.Lock()
	w.records = records
	w.mu.Unlock()
	return nil
}

func (w *Reservations) count(what string) {
	w.mu.Lock()
	w.tally[what]++
	w.mu.Unlock()
}

func (w *Reservations) phantom(format string, args ...any) {
	w.mu.Lock()
	w.phantoms = append(w.phantoms, fmt.Sprintf(format, args...))
	w.mu.Unlock()
}

func (w *Reservations) Client(i int, seed uint64) Client {
	return &rsClient{w: w, id: i, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
}

// rsHolding is a claim a client holds (or held), and its reservation.
type rsHolding struct {
	tenant, id  string
	attempt     int64
	fence       uint64
	reservation string
}

type rsClient struct {
	w               *Reservations
	id              int
	rng             *rand.Rand
	holdings, ended []rsHolding
}

func (c *rsClient) Step(node *cluster.Node, rec *Recorder) {
	svc := workitem.NewService(node, node)
	tenant := rsTenant(rec.Generation(c.rng))
	switch p := c.rng.IntN(100); {
	case p < 25 || len(c.holdings) == 0:
		c.submitAndClaim(svc, tenant, rec)
	case p < 60:
		c.reserve(svc, c.rng.IntN(len(c.holdings)), rec)
	case p < 70:
		c.release(svc, c.rng.IntN(len(c.holdings)), rec)
	case p < 80:
		c.complete(svc, c.finished(), rec)
	case p < 86:
		c.stale(svc, rec)
	case p < 93:
		c.telemetry(svc, rec)
	default:
		c.query(svc, tenant)
	}
	if len(c.holdings) > 3 {
		c.holdings = c.holdings[1:]
	}
	if len(c.ended) > 6 {
		c.ended = c.ended[1:]
	}
}

// finished picks the holding to complete: one that reserved (its work
// ran), else any.
func (c *rsClient) finished() int {
	for k, h := range c.holdings {
		if h.reservation != "" {
			return k
		}
	}
	return c.rng.IntN(len(c.holdings))
}

// failed records an error that is neither a decision the workload
// expects nor a fault's symptom.
func (c *rsClient) failed(what string, err error, rec *Recorder) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.failed[c.id] = true
	if !errors.Is(err, errs.Unavailable) {
		rec.odd = append(rec.odd, fmt.Sprintf("%s: %v", what, err))
	}
}

func (c *rsClient) submitAndClaim(svc *workitem.Service, tenant string, rec *Recorder) {
	c.w.mu.Lock()
	records := c.w.records
	c.w.mu.Unlock()
	n := c.w.items.Add(1)
	id := fmt.Sprintf("rs-%d-%d", c.id, n)
	meta, _ := json.Marshal(map[string]json.RawMessage{"resource_reservation": records[c.rng.IntN(len(records))]})
	ctx, cancel := rec.OpContext()
	_, err := svc.Submit(ctx, workitem.SubmitRequest{TenantRef: tenant, WorkItemID: id, IdempotencyKey: id, CommandDigest: "sha256:" + strings.Repeat("d", 64),
		Kind: "chaos", InputRef: "in", PolicyDigest: "sha256:" + strings.Repeat("1", 64), CatalogDigest: "sha256:" + strings.Repeat("2", 64), ModelDigest: "sha256:" + strings.Repeat("3", 64), MaxAttempts: 3, MaxTenantInFlight: workitem.MaxTenantInFlight, Metadata: meta})
	cancel()
	if err != nil && !errs.IsOutcomeUnknown(err) {
		c.failed("submit "+id, err, rec)
		return
	}
	if err != nil { // retried under its key: a replay if it was applied
		ctx, cancel = rec.OpContext()
		_, err = svc.Submit(ctx, workitem.SubmitRequest{TenantRef: tenant, WorkItemID: id, IdempotencyKey: id, CommandDigest: "sha256:" + strings.Repeat("d", 64),
			Kind: "chaos", InputRef: "in", PolicyDigest: "sha256:" + strings.Repeat("1", 64), CatalogDigest: "sha256:" + strings.Repeat("2", 64), ModelDigest: "sha256:" + strings.Repeat("3", 64), MaxAttempts: 3, MaxTenantInFlight: workitem.MaxTenantInFlight, Metadata: meta})
		cancel()
		if err != nil {
			c.failed("submit "+id, err, rec)
			return
		}
	}
	ctx, cancel = rec.OpContext()
	cl, err := svc.Claim(ctx, workitem.ClaimRequest{TenantRef: tenant, OwnerRef: fmt.Sprintf("client-%d", c.id), WorkItemID: id,
		TTLMs: int64(1500 + c.rng.IntN(2500)), IdempotencyKey: "claim-" + id})
	cancel()
	switch {
	case err == nil:
		rec.effective.Add(1)
		c.holdings = append(c.holdings, rsHolding{tenant: tenant, id: id, attempt: cl.Attempt, fence: cl.Fence})
	case errors.Is(err, errs.NotFound): // an unknown-outcome claim retried under its key answers the same claim
		c.w.count("claim not_found")
	default:
		c.failed("claim "+id, err, rec)
	}
}

func (c *rsClient) reserve(svc *workitem.Service, k int, rec *Recorder) {
	h := c.holdings[k]
	req := workitem.ReserveRequest{TenantRef: h.tenant, WorkItemID: h.id, Attempt: h.attempt, Fence: h.fence}
	if c.rng.IntN(3) == 0 {
		req.HostID = rsHost(c.rng.IntN(rsHosts))
	}
	res, err := c.callReserve(svc, req, rec)
	if err != nil {
		return
	}
	r := res.Reservation
	if r.Attempt != h.attempt || r.Fence != h.fence {
		c.w.phantom("reserve by attempt %d fence %d of %s/%s answered reservation %s of attempt %d fence %d", h.attempt, h.fence, h.tenant, h.id, r.ReservationID, r.Attempt, r.Fence)
	}
	c.holdings[k].reservation = r.ReservationID
	rec.effective.Add(1)
	rec.ReadBack(fmt.Sprintf("reservation %s of %s/%s", r.ReservationID, h.tenant, h.id), readBackReservation(r, ""))
}

// callReserve reserves, again after an unknown outcome (the same claim
// answers the reservation it holds), tallying refusals.
func (c *rsClient) callReserve(svc *workitem.Service, req workitem.ReserveRequest, rec *Recorder) (*workitem.ReservationResult, error) {
	for try := 0; ; try++ {
		ctx, cancel := rec.OpContext()
		res, err := svc.Reserve(ctx, req)
		cancel()
		if err == nil {
			c.w.count("reserve ok")
			return res, nil
		}
		if errs.IsOutcomeUnknown(err) && try == 0 {
			continue
		}
		e := errs.From(err)
		switch e.Code {
		case errs.CodeConflict, errs.CodeStaleFence, errs.CodeExpired:
			r, _ := e.Detail["reason"].(string)
			c.w.count(strings.TrimSuffix("reserve "+string(e.Code)+" "+r, " "))
		default:
			c.failed(fmt.Sprintf("reserve %+v", req), err, rec)
		}
		return nil, err
	}
}

func (c *rsClient) release(svc *workitem.Service, k int, rec *Recorder) {
	h := c.holdings[k]
	if h.reservation == "" {
		c.reserve(svc, k, rec)
		return
	}
	ctx, cancel := rec.OpContext()
	res, err := svc.Release(ctx, workitem.ReleaseRequest{TenantRef: h.tenant, WorkItemID: h.id, Attempt: h.attempt, Fence: h.fence, ReservationID: h.reservation})
	cancel()
	if err != nil {
		if code := errs.CodeOf(err); code != errs.CodeStaleFence {
			c.failed("release "+h.reservation, err, rec)
		}
		if errs.IsOutcomeUnknown(err) {
			c.w.count("release unknown")
			// Released or still active: nothing can be read back of it
			// as either. The holding's next step reserves again, which
			// answers the reservation it still holds if the release
			// was not applied, and a new one if it was.
			c.holdings[k].reservation = ""
		}
		return
	}
	c.holdings[k].reservation = ""
	c.w.count("release " + res.Reservation.Status)
	if res.Reservation.Status == workitem.ReservationReleased {
		rec.effective.Add(1)
		rec.ReadBack("release of "+h.reservation, readBackReservation(res.Reservation, workitem.ReservationReleased))
	}
}

func (c *rsClient) complete(svc *workitem.Service, k int, rec *Recorder) {
	h := c.holdings[k]
	c.holdings = append(c.holdings[:k], c.holdings[k+1:]...)
	ctx, cancel := rec.OpContext()
	_, err := svc.Complete(ctx, workitem.CompleteRequest{TenantRef: h.tenant, WorkItemID: h.id, Attempt: h.attempt, Fence: h.fence, Outcome: workitem.StatusSucceeded})
	cancel()
	switch code := errs.CodeOf(err); code {
	case "":
		rec.effective.Add(1)
		c.ended = append(c.ended, h)
		c.w.count("complete ok")
		rec.ReadBack(fmt.Sprintf("completion of %s/%s", h.tenant, h.id), readBackWorkItem(h.tenant, h.id, func(it workitem.WorkItem) bool {
			return it.Status == workitem.StatusSucceeded && it.Attempt == h.attempt
		}))
		if h.reservation != "" {
			rec.ReadBack("the end with its claim of "+h.reservation, readBackReservation(workitem.Reservation{ReservationID: h.reservation,
				TenantRef: h.tenant, WorkItemID: h.id, Index: 0}, workitem.ReservationEnded))
		}
	case errs.CodeExpired, errs.CodeStaleFence, errs.CodeConflict:
		c.w.count("complete " + string(code))
		c.ended = append(c.ended, h)
	default:
		c.failed("complete "+h.id, err, rec)
	}
}

// stale acts as a holder whose claim ended, or with a fence below the
// claim's: it must never reserve or release.
func (c *rsClient) stale(svc *workitem.Service, rec *Recorder) {
	var h rsHolding
	switch {
	case len(c.ended) > 0 && c.rng.IntN(2) == 0:
		h = c.ended[c.rng.IntN(len(c.ended))]
	case len(c.holdings) > 0:
		h = c.holdings[c.rng.IntN(len(c.holdings))]
		h.fence--
	default:
		return
	}
	ctx, cancel := rec.OpContext()
	defer cancel()
	if h.reservation != "" && c.rng.IntN(2) == 0 {
		res, err := svc.Release(ctx, workitem.ReleaseRequest{TenantRef: h.tenant, WorkItemID: h.id, Attempt: h.attempt, Fence: h.fence, ReservationID: h.reservation})
		if err == nil && res.Reservation.Status == workitem.ReservationActive {
			c.w.phantom("a stale holder (attempt %d fence %d) released %s and it stayed active", h.attempt, h.fence, h.reservation)
		}
		c.w.count("stale release " + string(errs.CodeOf(err)))
		return
	}
	res, err := svc.Reserve(ctx, workitem.ReserveRequest{TenantRef: h.tenant, WorkItemID: h.id, Attempt: h.attempt, Fence: h.fence})
	if err == nil {
		c.w.phantom("a stale holder (attempt %d fence %d of %s/%s) reserved %s", h.attempt, h.fence, h.tenant, h.id, res.Reservation.ReservationID)
	}
	c.w.count("stale reserve " + string(errs.CodeOf(err)))
}

func (c *rsClient) telemetry(svc *workitem.Service, rec *Recorder) {
	k := c.rng.IntN(rsHosts)
	seq := c.w.seqs[k].Add(1)
	ctx, cancel := rec.OpContext()
	res, err := svc.ReportTelemetry(ctx, workitem.TelemetryRequest{HostID: rsHost(k), ReportSeq: seq, DiskFreeMiB: 1 << 20})
	cancel()
	switch {
	case err == nil:
		rec.effective.Add(1)
		rec.ReadBack(fmt.Sprintf("report %d of %s", seq, rsHost(k)), func(ctx context.Context, node *cluster.Node) error {
			q, err := workitem.NewService(node, node).Query(ctx, workitem.QueryRequest{TenantRef: rsTenant(0), HostID: rsHost(k), MaxCount: workitem.MaxQueryPage}, fsm.Stale)
			if err != nil {
				return err
			}
			if len(q.Hosts) != 1 || q.Hosts[0].Telemetry.ReportSeq < res.Host.Telemetry.ReportSeq {
				return fmt.Errorf("host %s holds report %+v, acknowledged %d", rsHost(k), q.Hosts, seq)
			}
			return nil
		})
	case reasonOf(err) == "stale_report": // another client's later report came first
		c.w.count("telemetry stale_report")
	default:
		c.failed("telemetry", err, rec)
	}
}

func (c *rsClient) query(svc *workitem.Service, tenant string) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := svc.Query(ctx, workitem.QueryRequest{TenantRef: tenant, MaxCount: 16}, fsm.Linearizable); err == nil {
		c.w.count("query ok")
	}
}

func reasonOf(err error) string {
	if e := errs.From(err); e != nil {
		r, _ := e.Detail["reason"].(string)
		return r
	}
	return ""
}

// readBackReservation checks that a replica holds reservation want (or a
// later state of it): status, if set, is the status it must have.
func readBackReservation(want workitem.Reservation, status string) func(context.Context, *cluster.Node) error {
	return func(ctx context.Context, node *cluster.Node) error {
		q, err := workitem.NewService(node, node).Query(ctx, workitem.QueryRequest{TenantRef: want.TenantRef, WorkItemID: want.WorkItemID, MaxCount: workitem.MaxQueryPage}, fsm.Stale)
		if err != nil {
			return err
		}
		for _, r := range q.Reservations {
			if r.ReservationID != want.ReservationID {
				continue
			}
			switch {
			case want.HostID != "" && (r.HostID != want.HostID || r.Index != want.Index):
				return fmt.Errorf("reservation %s is on %s at %d; acknowledged on %s at %d", r.ReservationID, r.HostID, r.Index, want.HostID, want.Index)
			case status != "" && r.Status != status:
				return fmt.Errorf("reservation %s is %s, acknowledged %s", r.ReservationID, r.Status, status)
			}
			return nil
		}
		return fmt.Errorf("no reservation %s of %s/%s", want.ReservationID, want.TenantRef, want.WorkItemID)
	}
}

// Summary is the workload's tally.
func (w *Reservations) Summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return "reservation: " + tally(w.tally)
}
