//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// TestE2EReservations drives host resource reservation on three `arbiter
// serve` processes over HTTP, the profiles loaded from
// --reservation-profiles: eight reserves racing through every node for
// one exclusive repository, and eight for one host's last capacity
// (exactly one wins each); every refusal reason (409 with detail.reason,
// the refused items holding nothing); claim expiry (Tick) freeing the
// host for another item; the profile file switched to dark and SIGHUP
// refusing reserve while the query still answers; equal state hashes.
func TestE2EReservations(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	file := filepath.Join(t.TempDir(), "profiles.json")
	r := &rsE2E{t: t, file: file}
	r.writeProfiles(workitem.ModeEnabled, 0)
	r.cl = startE2ECluster(ctx, t, "--reservation-profiles", file)
	r.waitProfiles(ctx, workitem.ModeEnabled)
	r.hosts(ctx)

	r.raceExclusive(ctx)
	winner := r.raceLastCapacity(ctx)
	r.refusals(ctx)
	r.expiryFreesHost(ctx, winner)
	r.darkProfile(ctx)
	e2eCompareStateHashes(ctx, t, r.cl)
}

type rsE2E struct {
	t    *testing.T
	cl   *e2eCluster
	file string
	n    int
}

// rsE2EError is an error answer with its detail.
type rsE2EError struct {
	status int
	Code   string         `json:"code"`
	Detail map[string]any `json:"detail"`
}

func (e *rsE2EError) Error() string { return fmt.Sprintf("HTTP %d %s %v", e.status, e.Code, e.Detail) }

func (e *rsE2EError) reason() string { r, _ := e.Detail["reason"].(string); return r }

// do sends in to route on node n and decodes a 2xx answer into out; any
// other answer is an *rsE2EError.
func (r *rsE2E) do(ctx context.Context, n *e2eNode, method, route string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, e2eCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, n.url()+"/v1/workitems/"+route, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.cl.c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var env struct {
			Error *rsE2EError `json:"error"`
		}
		if json.Unmarshal(raw, &env) != nil || env.Error == nil {
			return &rsE2EError{status: resp.StatusCode, Code: string(raw)}
		}
		env.Error.status = resp.StatusCode
		return env.Error
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// must is do that must succeed, retried while the cluster is between
// leaders (every write it sends is safe to repeat).
func (r *rsE2E) must(ctx context.Context, what, method, route string, in, out any) {
	r.t.Helper()
	var err error
	for attempt := 0; attempt < 40; attempt++ {
		if err = r.do(ctx, r.cl.nodes[attempt%len(r.cl.nodes)], method, route, in, out); err == nil {
			return
		}
		if e, ok := err.(*rsE2EError); ok && e.status != http.StatusServiceUnavailable {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.t.Fatalf("%s: %v", what, err)
}

func rsE2EProfile(name, mode string, maxAge int64) workitem.Profile {
	return workitem.Profile{Name: name, Version: "1", Weights: workitem.Weights{CPU: 1, Memory: 1, Disk: 1, Process: 1},
		Max:      workitem.Dimensions{CPUMillis: 16000, MemoryMiB: 65536, DiskMiB: 1 << 20, Processes: 64},
		Fairness: workitem.FairnessPolicy{MaxDebt: 100, DecayPerS: 1}, Disk: workitem.DiskPolicy{MinFreeMiB: 100},
		TelemetryMaxAgeMs: maxAge, Mode: mode}
}

// writeProfiles writes the profile file, at fileVersion: p in mode, and
// one profile for each other case (quick telemetry, incomplete, dark,
// shadow).
func (r *rsE2E) writeProfiles(mode string, fileVersion uint64) {
	inc := rsE2EProfile("inc", workitem.ModeEnabled, 600_000)
	inc.Weights.Disk = 0
	set := workitem.ProfileFile{FileVersion: fileVersion, Profiles: []workitem.Profile{rsE2EProfile("p", mode, 600_000), rsE2EProfile("quick", workitem.ModeEnabled, 1500),
		inc, rsE2EProfile("dark", workitem.ModeDark, 600_000), rsE2EProfile("shadow", workitem.ModeShadow, 600_000)}}
	b, err := json.Marshal(set)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(r.file, b, 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// waitProfiles waits until every node reads profile p in mode.
func (r *rsE2E) waitProfiles(ctx context.Context, mode string) {
	r.cl.eventually(ctx, 20*time.Second, "profile p "+mode+" on every node", func() (bool, string) {
		for _, n := range r.cl.nodes {
			var res workitem.ProfilesResult
			if err := r.do(ctx, n, http.MethodGet, "profiles?consistency=stale", nil, &res); err != nil {
				return false, err.Error()
			}
			found := ""
			for _, p := range res.Profiles {
				if p.Name == "p" {
					found = p.Mode
				}
			}
			if len(res.Profiles) != 5 || found != mode {
				return false, fmt.Sprintf("%s: %d profiles, p %q", n.id, len(res.Profiles), found)
			}
		}
		return true, ""
	})
}

// hosts registers h1 (zone a, 4000 millicpu), h2 (zone b, large) and hq
// (for the quick profile), each with a report.
func (r *rsE2E) hosts(ctx context.Context) {
	for _, h := range []workitem.PutHostRequest{
		{HostID: "h1", Labels: map[string]string{"zone": "a"}, Capacity: workitem.Dimensions{CPUMillis: 4000, MemoryMiB: 65536, DiskMiB: 1 << 20, Processes: 64}},
		{HostID: "h2", Labels: map[string]string{"zone": "b"}, Capacity: workitem.Dimensions{CPUMillis: 64000, MemoryMiB: 65536, DiskMiB: 1 << 20, Processes: 64}},
		{HostID: "hq", Labels: map[string]string{"role": "q"}, Capacity: workitem.Dimensions{CPUMillis: 4000, MemoryMiB: 8192, DiskMiB: 1 << 20, Processes: 8}},
	} {
		r.must(ctx, "host "+h.HostID, http.MethodPost, "hosts", h, nil)
		r.must(ctx, "telemetry "+h.HostID, http.MethodPost, "hosts/telemetry", workitem.TelemetryRequest{HostID: h.HostID, ReportSeq: 1, DiskFreeMiB: 1 << 20}, nil)
	}
}

func rsE2EExt(mod func(*extension.Extension)) *extension.Extension {
	e := extension.Extension{Profile: extension.ProfileRef{Name: "p", Version: "1"},
		Dimensions:  workitem.Dimensions{CPUMillis: 1000, MemoryMiB: 1024, DiskMiB: 1024, Processes: 1},
		Concurrency: extension.Concurrency{Key: "k", Limit: 64}, Repository: "app", BaseRef: "main",
		Fairness: extension.Fairness{Group: "team", Cost: 1}, Disk: extension.DiskPolicy{MinFreeMiB: 10}}
	if mod != nil {
		mod(&e)
	}
	return &e
}

// item submits an item with record e (nil: none) and claims it for ttl.
func (r *rsE2E) item(ctx context.Context, e *extension.Extension, ttl time.Duration) workitem.ClaimResult {
	r.t.Helper()
	r.n++
	id := fmt.Sprintf("i%03d", r.n)
	req := wiE2EItem(id)
	req.TenantRef, req.IdempotencyKey = "e2e", "k-"+id
	if e != nil {
		_, raw, err := extension.Seal(*e)
		if err != nil {
			r.t.Fatal(err)
		}
		req.Metadata, _ = json.Marshal(map[string]any{"repository_request_v1": map[string]string{"repo": "app"}, "resource_reservation": json.RawMessage(raw)})
	}
	r.must(ctx, "submit "+id, http.MethodPost, "submit", req, nil)
	var c workitem.ClaimResult
	r.must(ctx, "claim "+id, http.MethodPost, "claim", workitem.ClaimRequest{TenantRef: "e2e", OwnerRef: "w", WorkItemID: id, TTLMs: ttl.Milliseconds(), IdempotencyKey: "c-" + id}, &c)
	return c
}

func rsE2EReserve(c workitem.ClaimResult, host string) workitem.ReserveRequest {
	return workitem.ReserveRequest{TenantRef: "e2e", WorkItemID: c.WorkItem.WorkItemID, Attempt: c.Attempt, Fence: c.Fence, HostID: host}
}

// race sends one reserve per claim at once, each through another node,
// and requires exactly one to win and the others to be refused for
// reason; it returns the winner's reservation.
func (r *rsE2E) race(ctx context.Context, what string, claims []workitem.ClaimResult, host, reason string) workitem.Reservation {
	r.t.Helper()
	var mu sync.Mutex
	var won []workitem.Reservation
	refused := map[string]int{}
	var wg sync.WaitGroup
	for i, c := range claims {
		wg.Go(func() {
			var res workitem.ReservationResult
			err := r.do(ctx, r.cl.nodes[i%len(r.cl.nodes)], http.MethodPost, "reserve", rsE2EReserve(c, host), &res)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won = append(won, res.Reservation)
				return
			}
			if e, ok := err.(*rsE2EError); ok && e.status == http.StatusConflict {
				refused[e.reason()]++
				return
			}
			r.t.Errorf("%s: reserve of %s: %v", what, c.WorkItem.WorkItemID, err)
		})
	}
	wg.Wait()
	if len(won) != 1 || refused[reason] != len(claims)-1 {
		r.t.Fatalf("%s: %d won, refused %v; want exactly one winner and %d refused %s", what, len(won), refused, len(claims)-1, reason)
	}
	r.t.Logf("%s: %s won, %d refused %s", what, won[0].WorkItemID, refused[reason], reason)
	return won[0]
}

func (r *rsE2E) raceExclusive(ctx context.Context) {
	var claims []workitem.ClaimResult
	for k := range 8 {
		claims = append(claims, r.item(ctx, rsE2EExt(func(e *extension.Extension) {
			e.Repository, e.Exclusivity.Repository, e.BaseRef = "mono", true, fmt.Sprintf("b%d", k)
			e.HostLabels = map[string]string{"zone": "b"}
		}), time.Hour))
	}
	r.race(ctx, "exclusive repository", claims, "", workitem.RefuseRepositoryExclusive)
}

// raceLastCapacity fills h1 to 3000 of 4000 millicpu, then races eight
// items of 1000 for the last; the winner's claim lasts 5 s.
func (r *rsE2E) raceLastCapacity(ctx context.Context) workitem.Reservation {
	filler := r.item(ctx, rsE2EExt(func(e *extension.Extension) { e.Dimensions.CPUMillis, e.BaseRef = 3000, "fill" }), time.Hour)
	r.must(ctx, "filler", http.MethodPost, "reserve", rsE2EReserve(filler, "h1"), nil)
	var claims []workitem.ClaimResult
	for k := range 8 {
		claims = append(claims, r.item(ctx, rsE2EExt(func(e *extension.Extension) {
			e.BaseRef, e.Concurrency.Key = fmt.Sprintf("last-%d", k), fmt.Sprintf("k%d", k)
		}), 5*time.Second))
	}
	return r.race(ctx, "h1's last capacity", claims, "h1", workitem.RefuseCapacity)
}

// refusals sends a reserve for each reason the race did not show, and
// checks that none of the refused items holds anything afterwards.
func (r *rsE2E) refusals(ctx context.Context) {
	t := r.t
	node := r.cl.nodes[1]
	var refusedItems []string
	expect := func(what string, c workitem.ClaimResult, host, reason string) {
		t.Helper()
		err := r.do(ctx, node, http.MethodPost, "reserve", rsE2EReserve(c, host), nil)
		e, ok := err.(*rsE2EError)
		if !ok || e.status != http.StatusConflict || e.Code != "conflict" || e.reason() != reason {
			t.Errorf("%s: %v, want 409 conflict %s", what, err, reason)
		}
		refusedItems = append(refusedItems, c.WorkItem.WorkItemID)
	}
	item := func(mod func(*extension.Extension)) workitem.ClaimResult {
		return r.item(ctx, rsE2EExt(func(e *extension.Extension) { e.BaseRef = fmt.Sprintf("r%d", r.n); mod(e) }), time.Hour)
	}
	expect("capacity", item(func(*extension.Extension) {}), "h1", workitem.RefuseCapacity)
	expect("no_eligible_host", item(func(e *extension.Extension) { e.HostLabels = map[string]string{"zone": "z"} }), "", workitem.RefuseNoEligibleHost)
	r.must(ctx, "anti-affinity holder", http.MethodPost, "reserve", rsE2EReserve(item(func(e *extension.Extension) { e.AntiAffinity = []string{"gpu"} }), "h2"), nil)
	expect("anti_affinity", item(func(e *extension.Extension) { e.AntiAffinity = []string{"gpu"} }), "h2", workitem.RefuseAntiAffinity)
	expect("disk_watermark", item(func(e *extension.Extension) { e.Disk.MinFreeMiB = 1 << 20 }), "h2", workitem.RefuseDiskWatermark)
	expect("repository_exclusive", item(func(e *extension.Extension) { e.Repository = "mono" }), "h2", workitem.RefuseRepositoryExclusive)
	r.must(ctx, "shared branch holder", http.MethodPost, "reserve", rsE2EReserve(item(func(e *extension.Extension) { e.BaseRef = "trunk" }), "h2"), nil)
	expect("branch_exclusive", item(func(e *extension.Extension) { e.Branch, e.Exclusivity.Branch = "trunk", true }), "h2", workitem.RefuseBranchExclusive)
	// The concurrency holder also charges 60 of the group's 100: the next
	// 60 is refused (debt decays by 1 a second meanwhile).
	r.must(ctx, "concurrency holder", http.MethodPost, "reserve", rsE2EReserve(item(func(e *extension.Extension) {
		e.Concurrency, e.Fairness.Cost = extension.Concurrency{Key: "solo", Limit: 1}, 60
	}), "h2"), nil)
	expect("concurrency_limit", item(func(e *extension.Extension) { e.Concurrency = extension.Concurrency{Key: "solo", Limit: 1} }), "h2", workitem.RefuseConcurrencyLimit)
	expect("fairness", item(func(e *extension.Extension) { e.Fairness.Cost = 60 }), "h2", workitem.RefuseFairness)
	expect("profile_disabled (dark)", item(func(e *extension.Extension) { e.Profile.Name = "dark" }), "h2", workitem.RefuseProfileDisabled)
	expect("profile_disabled (shadow)", item(func(e *extension.Extension) { e.Profile.Name = "shadow" }), "h2", workitem.RefuseProfileDisabled)
	expect("profile_incomplete", item(func(e *extension.Extension) { e.Profile.Name = "inc" }), "h2", workitem.RefuseProfileIncomplete)
	expect("not_reservable", r.item(ctx, nil, time.Hour), "h2", workitem.RefuseNotReservable)
	stale := item(func(e *extension.Extension) { e.Profile.Name, e.HostLabels = "quick", map[string]string{"role": "q"} })
	time.Sleep(1600 * time.Millisecond)
	expect("telemetry_stale", stale, "hq", workitem.RefuseTelemetryStale)

	// fingerprint_mismatch: this cluster checks every record at submit
	// (a reserve-time mismatch needs an item admitted by an older
	// member; the in-process tests cover it).
	_, raw, _ := extension.Seal(*rsE2EExt(nil))
	i := strings.Index(string(raw), `"v1:`) + 5
	tampered := []byte(string(raw[:i]) + map[bool]string{true: "1", false: "0"}[raw[i] == '0'] + string(raw[i+1:]))
	req := wiE2EItem("tampered")
	req.TenantRef, req.IdempotencyKey = "e2e", "k-tampered"
	req.Metadata, _ = json.Marshal(map[string]any{"resource_reservation": json.RawMessage(tampered)})
	err := r.do(ctx, node, http.MethodPost, "submit", req, nil)
	if e, ok := err.(*rsE2EError); !ok || e.status != http.StatusUnprocessableEntity || e.reason() != extension.ReasonFingerprintMismatch {
		t.Errorf("a tampered record at submit: %v", err)
	}

	for _, id := range refusedItems {
		var q workitem.QueryResult
		r.must(ctx, "query "+id, http.MethodPost, "reservations/query", workitem.QueryRequest{TenantRef: "e2e", WorkItemID: id, MaxCount: 1}, &q)
		if len(q.Reservations) != 0 {
			t.Errorf("refused item %s holds %+v", id, q.Reservations)
		}
	}
}

// expiryFreesHost waits for the race winner's 5 s claim to expire: Tick
// requeues it and ends its reservation, and h1's last capacity goes to
// another item.
func (r *rsE2E) expiryFreesHost(ctx context.Context, winner workitem.Reservation) {
	r.cl.eventually(ctx, 15*time.Second, "the winner's reservation ended with its expired claim", func() (bool, string) {
		var q workitem.QueryResult
		if err := r.do(ctx, r.cl.nodes[2], http.MethodPost, "reservations/query", workitem.QueryRequest{TenantRef: "e2e", WorkItemID: winner.WorkItemID, MaxCount: 8}, &q); err != nil {
			return false, err.Error()
		}
		if len(q.Reservations) != 1 || q.Reservations[0].Status != workitem.ReservationEnded || q.Reservations[0].EndReason != workitem.EndClaimExpired {
			return false, fmt.Sprintf("%+v", q.Reservations)
		}
		return true, ""
	})
	next := r.item(ctx, rsE2EExt(func(e *extension.Extension) { e.BaseRef = "after-expiry" }), time.Hour)
	var res workitem.ReservationResult
	r.must(ctx, "h1 after the expiry", http.MethodPost, "reserve", rsE2EReserve(next, "h1"), &res)
	r.t.Logf("h1's last capacity went to %s once %s's claim expired", res.Reservation.WorkItemID, winner.WorkItemID)
}

// darkProfile rewrites the file with p dark under a newer file_version
// (the file replaces the cluster's set only then) and SIGHUPs every
// node: a reserve under p is refused while the query still answers.
func (r *rsE2E) darkProfile(ctx context.Context) {
	r.writeProfiles(workitem.ModeDark, 1)
	for _, n := range r.cl.nodes {
		n.signal(r.t, syscall.SIGHUP)
	}
	r.waitProfiles(ctx, workitem.ModeDark)
	c := r.item(ctx, rsE2EExt(func(e *extension.Extension) { e.BaseRef = "dark" }), time.Hour)
	err := r.do(ctx, r.cl.nodes[0], http.MethodPost, "reserve", rsE2EReserve(c, ""), nil)
	if e, ok := err.(*rsE2EError); !ok || e.status != http.StatusConflict || e.reason() != workitem.RefuseProfileDisabled {
		r.t.Fatalf("reserve under a dark profile: %v", err)
	}
	var q workitem.QueryResult
	r.must(ctx, "query under a dark profile", http.MethodPost, "reservations/query", workitem.QueryRequest{TenantRef: "e2e", MaxCount: 128}, &q)
	active := 0
	for _, x := range q.Reservations {
		if x.Status == workitem.ReservationActive {
			active++
		}
	}
	if active == 0 || len(q.Hosts) == 0 {
		r.t.Fatalf("the query under a dark profile: %d active reservations, %d hosts", active, len(q.Hosts))
	}
}
