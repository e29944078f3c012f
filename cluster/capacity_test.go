package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// The capacity HTTP tests run with authentication on. Principals (each
// helper of this file is prefixed capH so that it cannot collide with the
// helpers of other test files of the package):
//
//	ops  tenants *  admin
//	ctl  tenant t   controller
//	p1   tenant t   member
//	p2   tenant t   member
//	rd   tenant t   reader
//	ou   tenant u   member
var capHPrincipals = []identity.PrincipalConfig{
	{ID: "ops", Tenants: []string{"*"}, Roles: []string{identity.RoleAdmin}},
	{ID: "ctl", Tenants: []string{"t"}, Roles: []string{identity.RoleController}},
	{ID: "p1", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}},
	{ID: "p2", Tenants: []string{"t"}, Roles: []string{identity.RoleMember}},
	{ID: "rd", Tenants: []string{"t"}, Roles: []string{identity.RoleReader}},
	{ID: "ou", Tenants: []string{"u"}, Roles: []string{identity.RoleMember}},
}

func capHToken(id string) string { return "capacity-http-token-" + id }

func capHCluster(t *testing.T) *clustertest.Cluster {
	t.Helper()
	var cfgs []identity.PrincipalConfig
	for _, p := range capHPrincipals {
		p.TokenSHA256 = []string{identity.HashToken(capHToken(p.ID))}
		cfgs = append(cfgs, p)
	}
	reg, err := identity.NewRegistry(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	return clustertest.New(t, clustertest.Options{Nodes: 3, Principals: reg})
}

// capHPost posts v as JSON to base+route as principal who ("" sends no
// credential).
func capHPost(t *testing.T, base, route, who string, v any) apiReply {
	t.Helper()
	body, ok := v.([]byte)
	if !ok {
		var err error
		if body, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, base+route, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+capHToken(who))
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", route, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatalf("POST %s: %v", route, err)
	}
	return apiReply{status: resp.StatusCode, header: resp.Header, body: buf.Bytes()}
}

// capHDenied requires the error envelope of a denial: the decision's code
// and status, detail.decision, and the result that explains it in
// detail.result, decoded into result.
func capHDenied(t *testing.T, what string, r apiReply, status int, code errs.Code, result any) {
	t.Helper()
	r.wantError(t, what, status, code)
	var env struct {
		Error struct {
			Detail struct {
				Decision string          `json:"decision"`
				Result   json.RawMessage `json:"result"`
			} `json:"detail"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("%s: %v in %s", what, err, r.body)
	}
	if env.Error.Detail.Decision != string(code) || len(env.Error.Detail.Result) == 0 {
		t.Errorf("%s: detail.decision %q, detail.result %s; want %s and the result", what, env.Error.Detail.Decision, env.Error.Detail.Result, code)
		return
	}
	if err := json.Unmarshal(env.Error.Detail.Result, result); err != nil {
		t.Errorf("%s: detail.result %s: %v", what, env.Error.Detail.Result, err)
	}
	var decision struct {
		Decision string `json:"decision"`
	}
	if err := json.Unmarshal(env.Error.Detail.Result, &decision); err != nil || decision.Decision != string(code) {
		t.Errorf("%s: detail.result.decision %q, want %s", what, decision.Decision, code)
	}
}

// capHRefused requires an error reply without a result (a refused
// request, not a decision).
func capHRefused(t *testing.T, what string, r apiReply, status int, code errs.Code) {
	t.Helper()
	r.wantError(t, what, status, code)
	if bytes.Contains(r.body, []byte(`"result"`)) {
		t.Errorf("%s: a refusal carries a result: %s", what, r.body)
	}
}

func TestCapacityHTTPRoutes(t *testing.T) {
	c := capHCluster(t)
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % c.Size()
	base := apiBase(c, follower)
	post := func(route, who string, v any) apiReply { t.Helper(); return capHPost(t, base, route, who, v) }
	p1 := capacity.OwnerDigest("p1")
	p2 := capacity.OwnerDigest("p2")
	demand := func(cell, class string, n uint64) capacity.Demand {
		return capacity.Demand{CellID: cell, ResourceClass: class, Amount: n}
	}
	acq := func(key, owner string, ttl int64, ds ...capacity.Demand) capacity.AcquireRequest {
		return capacity.AcquireRequest{SchemaVersion: "1", TenantRef: "t", WorkItemID: "w-" + key, OwnerDigest: owner,
			IdempotencyKey: key, TTLMs: ttl, Demands: ds}
	}
	leases := func(owner string, refs ...capacity.LeaseRef) capacity.LeasesRequest {
		return capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: owner, Leases: refs}
	}
	read := capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 10}

	// Cells, by the tenant's controller.
	var cell capacity.UpdateCellResult
	r := post("/v1/capacity/cells", "ctl", capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t",
		Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"gpu": 2, "mem": 64}}})
	r.ok(t, "cells", &cell)
	wantKeys(t, "cells result", r.body, "schema_version", "decision", "cell", "message", "now_ms")
	if cell.Decision != capacity.Granted || cell.Cell.Epoch != 1 || len(cell.Cell.Classes) != 2 {
		t.Fatalf("cells: %+v", cell)
	}

	// Acquire, replay, idempotency conflict.
	var got capacity.AcquireResult
	first := acq("k1", p1, 600_000, demand("c", "gpu", 1), demand("c", "mem", 48))
	r = post("/v1/capacity/acquire", "p1", first)
	r.ok(t, "acquire", &got)
	wantKeys(t, "acquire result", r.body, "schema_version", "decision", "leases", "available", "message", "now_ms")
	// Fences derive from the log index (capacity_acquire version 2): the
	// two leases of one acquire take consecutive ones.
	if got.Decision != capacity.Granted || len(got.Leases) != 2 || got.Leases[0].Fence == 0 || got.Leases[1].Fence != got.Leases[0].Fence+1 ||
		got.Leases[0].OwnerDigest != p1 || len(got.Available) != 2 || got.Available[1].Used != 48 {
		t.Fatalf("acquire: %+v", got)
	}
	var replay capacity.AcquireResult
	post("/v1/capacity/acquire", "p1", first).ok(t, "acquire replay", &replay)
	if !replay.Replayed || replay.Leases[0].LeaseID != got.Leases[0].LeaseID {
		t.Fatalf("replay: %+v", replay)
	}
	other := first
	other.Demands = []capacity.Demand{demand("c", "gpu", 1)}
	c.Unchanged(t, "acquire reusing a key", func() {
		capHRefused(t, "acquire reusing a key", post("/v1/capacity/acquire", "p1", other), http.StatusConflict, errs.CodeIdempotencyConflict)
	})
	refs := []capacity.LeaseRef{
		{LeaseID: got.Leases[0].LeaseID, LeaseEpoch: 1, Fence: got.Leases[0].Fence},
		{LeaseID: got.Leases[1].LeaseID, LeaseEpoch: 1, Fence: got.Leases[1].Fence},
	}

	// Renew.
	var renewed capacity.LeasesResult
	r = post("/v1/capacity/renew", "p1", leases(p1, refs...))
	r.ok(t, "renew", &renewed)
	wantKeys(t, "renew result", r.body, "schema_version", "decision", "leases", "message", "now_ms")
	if renewed.Decision != capacity.Granted || renewed.Leases[0].LeaseEpoch != 2 || renewed.Leases[0].ExpiresAtMs != renewed.NowMs+600_000 {
		t.Fatalf("renew: %+v", renewed)
	}
	stale := refs[0] // epoch 1 now
	refs[0].LeaseEpoch, refs[1].LeaseEpoch = 2, 2

	// Reads and reclaim.
	var st capacity.ReadResult
	r = post("/v1/capacity/status", "rd", read)
	r.ok(t, "status", &st)
	wantKeys(t, "status result", r.body, "schema_version", "cells", "leases", "next_cursor", "now_ms")
	if len(st.Cells) != 1 || st.Cells[0].Classes[0].Used != 1 || st.Cells[0].Classes[1].Used != 48 || st.Cells[0].LastFence != got.Leases[1].Fence {
		t.Fatalf("status: %+v", st)
	}
	var rc capacity.ReadResult
	post("/v1/capacity/reconcile", "p1", read).ok(t, "reconcile", &rc)
	if len(rc.Leases) != 2 || rc.Leases[0].State != capacity.LeaseActive || len(rc.Cells) != 1 {
		t.Fatalf("reconcile: %+v", rc)
	}
	var rcl capacity.ReclaimResult
	r = post("/v1/capacity/reclaim", "p2", capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 10})
	r.ok(t, "reclaim", &rcl)
	wantKeys(t, "reclaim result", r.body, "schema_version", "decision", "reclaimed_lease_ids", "next_cursor", "now_ms")
	if rcl.Decision != capacity.Granted || len(rcl.ReclaimedLeaseIDs) != 0 {
		t.Fatalf("reclaim: %+v", rcl)
	}

	// Every denial: the decision's status, code and result.
	var denied capacity.AcquireResult
	c.Unchanged(t, "acquire over capacity", func() {
		capHDenied(t, "acquire over capacity", post("/v1/capacity/acquire", "p2", acq("k2", p2, 1000, demand("c", "gpu", 2))), http.StatusConflict, errs.CodeExhausted, &denied)
	})
	if len(denied.Available) != 1 || denied.Available[0].Free != 1 || len(denied.Leases) != 0 {
		t.Errorf("exhausted result: %+v", denied)
	}
	// A denial is not kept for replay: the retry under k2 asks again.
	var retried capacity.AcquireResult
	c.Unchanged(t, "retry of a denied acquire", func() {
		capHDenied(t, "retry of a denied acquire", post("/v1/capacity/acquire", "p2", acq("k2", p2, 1000, demand("c", "gpu", 2))), http.StatusConflict, errs.CodeExhausted, &retried)
	})
	if retried.Replayed {
		t.Errorf("the retry of a denial was replayed (%+v), not decided again", retried)
	}
	epoch := uint64(9)
	staleEpoch := acq("k3", p2, 1000, demand("c", "gpu", 1))
	staleEpoch.Demands[0].ExpectedEpoch = &epoch
	c.Unchanged(t, "acquire at another epoch", func() {
		capHDenied(t, "acquire at another epoch", post("/v1/capacity/acquire", "p2", staleEpoch), http.StatusConflict, errs.CodeStaleEpoch, &denied)
	})
	c.Unchanged(t, "acquire on no cell", func() {
		capHDenied(t, "acquire on no cell", post("/v1/capacity/acquire", "p2", acq("k4", p2, 1000, demand("nowhere", "gpu", 1))), http.StatusUnprocessableEntity, errs.CodeInvalid, &denied)
	})
	var deniedCell capacity.UpdateCellResult
	capHDenied(t, "cells at another epoch", post("/v1/capacity/cells", "ctl", capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t", ExpectedEpoch: &epoch,
		Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"gpu": 4, "mem": 64}}}), http.StatusConflict, errs.CodeStaleEpoch, &deniedCell)
	if deniedCell.Cell.Epoch != 1 {
		t.Errorf("stale cells result: %+v", deniedCell)
	}
	capHDenied(t, "cells below usage", post("/v1/capacity/cells", "ctl", capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t",
		Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"gpu": 2, "mem": 10}}}), http.StatusUnprocessableEntity, errs.CodeInvalid, &deniedCell)
	var deniedLeases capacity.LeasesResult
	c.Unchanged(t, "renew at an old epoch", func() {
		capHDenied(t, "renew at an old epoch", post("/v1/capacity/renew", "p1", leases(p1, stale)), http.StatusConflict, errs.CodeStaleEpoch, &deniedLeases)
	})
	wrongFence := refs[1]
	wrongFence.Fence = 99
	c.Unchanged(t, "release with another fence", func() {
		capHDenied(t, "release with another fence", post("/v1/capacity/release", "p1", leases(p1, refs[0], wrongFence)), http.StatusConflict, errs.CodeStaleFence, &deniedLeases)
	})
	c.Unchanged(t, "release of another owner's lease", func() {
		capHDenied(t, "release of another owner's lease", post("/v1/capacity/release", "p2", leases(p2, refs[0])), http.StatusConflict, errs.CodeStaleFence, &deniedLeases)
	})
	c.Unchanged(t, "renew of no lease", func() {
		capHDenied(t, "renew of no lease", post("/v1/capacity/renew", "p1", leases(p1, capacity.LeaseRef{LeaseID: "nope", LeaseEpoch: 1, Fence: 1})), http.StatusUnprocessableEntity, errs.CodeInvalid, &deniedLeases)
	})
	// Expired: a short lease, renewed after FSM time passed its deadline.
	var short capacity.AcquireResult
	post("/v1/capacity/acquire", "p2", acq("k5", p2, 200, demand("c", "gpu", 1))).ok(t, "short acquire", &short)
	shortRef := capacity.LeaseRef{LeaseID: short.Leases[0].LeaseID, LeaseEpoch: 1, Fence: short.Leases[0].Fence}
	if !c.Eventually(10*time.Second, func() bool {
		var s capacity.ReadResult
		post("/v1/capacity/status", "p2", read).ok(t, "status", &s)
		return s.NowMs >= short.Leases[0].ExpiresAtMs
	}) {
		t.Fatal("FSM time did not pass the short lease's deadline")
	}
	c.Unchanged(t, "renew after the deadline", func() {
		capHDenied(t, "renew after the deadline", post("/v1/capacity/renew", "p2", leases(p2, shortRef)), http.StatusConflict, errs.CodeExpired, &deniedLeases)
	})
	if deniedLeases.NowMs < short.Leases[0].ExpiresAtMs {
		t.Errorf("expired at FSM time %d before the deadline %d", deniedLeases.NowMs, short.Leases[0].ExpiresAtMs)
	}
	// Backpressure needs 100,000 active leases of one tenant: through raft
	// that is minutes, so it is tested on a bare FSM (capacity package).

	// Refusals by identity: 403 (or 404 for reads, 401 without a token).
	c.Unchanged(t, "acquire for another owner", func() {
		capHRefused(t, "acquire for another owner", post("/v1/capacity/acquire", "p1", acq("k6", p2, 1000, demand("c", "gpu", 1))), http.StatusForbidden, errs.CodeForbidden)
	})
	c.Unchanged(t, "acquire for a made-up owner", func() {
		capHRefused(t, "acquire for a made-up owner", post("/v1/capacity/acquire", "p1", acq("k7", "owner-a", 1000, demand("c", "gpu", 1))), http.StatusForbidden, errs.CodeForbidden)
	})
	c.Unchanged(t, "acquire by a reader", func() {
		capHRefused(t, "acquire by a reader", post("/v1/capacity/acquire", "rd", acq("k8", capacity.OwnerDigest("rd"), 1000, demand("c", "gpu", 1))), http.StatusForbidden, errs.CodeForbidden)
	})
	outside := acq("k9", capacity.OwnerDigest("ou"), 1000, demand("c", "gpu", 1))
	c.Unchanged(t, "acquire in a tenant not the principal's", func() {
		capHRefused(t, "acquire in a tenant not the principal's", post("/v1/capacity/acquire", "ou", outside), http.StatusForbidden, errs.CodeForbidden)
	})
	c.Unchanged(t, "release by another principal as the owner", func() {
		capHRefused(t, "release by another principal as the owner", post("/v1/capacity/release", "p2", leases(p1, refs...)), http.StatusForbidden, errs.CodeForbidden)
	})
	c.Unchanged(t, "reclaim by a reader", func() {
		capHRefused(t, "reclaim by a reader", post("/v1/capacity/reclaim", "rd", capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 1}), http.StatusForbidden, errs.CodeForbidden)
	})
	cellsU := capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "u", Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"gpu": 1}}}
	c.Unchanged(t, "cells by a member", func() {
		capHRefused(t, "cells by a member", post("/v1/capacity/cells", "p1", capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t", Cell: capacity.CellSpec{CellID: "n"}}), http.StatusForbidden, errs.CodeForbidden)
	})
	c.Unchanged(t, "cells of another tenant by a controller", func() {
		capHRefused(t, "cells of another tenant by a controller", post("/v1/capacity/cells", "ctl", cellsU), http.StatusForbidden, errs.CodeForbidden)
	})
	c.Unchanged(t, "status of another tenant", func() {
		capHRefused(t, "status of another tenant", post("/v1/capacity/status", "ou", read), http.StatusNotFound, errs.CodeNotFound)
	})
	c.Unchanged(t, "reconcile of another tenant", func() {
		capHRefused(t, "reconcile of another tenant", post("/v1/capacity/reconcile", "ou", read), http.StatusNotFound, errs.CodeNotFound)
	})
	c.Unchanged(t, "acquire without a credential", func() {
		capHRefused(t, "acquire without a credential", post("/v1/capacity/acquire", "", first), http.StatusUnauthorized, errs.CodeUnauthorized)
	})

	// Bounds: 422 before anything is proposed.
	seventeen := make([]capacity.Demand, 17)
	for i := range seventeen {
		seventeen[i] = demand("c", "gpu", 1)
	}
	dup := leases(p1, refs[0], refs[0])
	bad := []struct {
		what, route string
		body        any
	}{
		{"17 demands", "/v1/capacity/acquire", acq("b1", p1, 1000, seventeen...)},
		{"amount 0", "/v1/capacity/acquire", acq("b2", p1, 1000, demand("c", "gpu", 0))},
		{"amount 1e9+1", "/v1/capacity/acquire", acq("b3", p1, 1000, demand("c", "gpu", capacity.MaxAmount+1))},
		{"ttl 24h+1ms", "/v1/capacity/acquire", acq("b4", p1, capacity.MaxTTL.Milliseconds()+1, demand("c", "gpu", 1))},
		{"a cell id of 513 bytes", "/v1/capacity/acquire", acq("b5", p1, 1000, demand(strings.Repeat("c", 513), "gpu", 1))},
		{"schema_version 2", "/v1/capacity/acquire", json.RawMessage(`{"schema_version":"2","tenant_ref":"t","work_item_id":"w","owner_digest":"` + p1 + `","idempotency_key":"b6","ttl_ms":1,"demands":[{"cell_id":"c","resource_class":"gpu","amount":1}]}`)},
		{"an unknown field", "/v1/capacity/acquire", json.RawMessage(`{"schema_version":"1","tenant_ref":"t","surprise":1}`)},
		{"a negative amount", "/v1/capacity/acquire", json.RawMessage(`{"schema_version":"1","tenant_ref":"t","work_item_id":"w","owner_digest":"` + p1 + `","idempotency_key":"b7","ttl_ms":1,"demands":[{"cell_id":"c","resource_class":"gpu","amount":-1}]}`)},
		{"a lease twice", "/v1/capacity/release", dup},
		{"17 leases", "/v1/capacity/renew", leases(p1, make([]capacity.LeaseRef, 17)...)},
		{"max_count 129", "/v1/capacity/status", capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 129}},
		{"max_count 0", "/v1/capacity/reconcile", capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t"}},
		{"max_count 129", "/v1/capacity/reclaim", capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 129}},
		{"a cursor never issued", "/v1/capacity/reconcile", capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 1, Cursor: "reconcile.AAAAAAAAAAAA"}},
		{"17 classes", "/v1/capacity/cells", capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t", Cell: capacity.CellSpec{CellID: "n", Capacities: seventeenClasses()}}},
	}
	for _, b := range bad {
		body := b.body
		if raw, ok := body.(json.RawMessage); ok {
			body = []byte(raw)
		}
		who := "p1"
		if b.route == "/v1/capacity/cells" {
			who = "ctl"
		}
		capHRefused(t, b.route+" with "+b.what, post(b.route, who, body), http.StatusUnprocessableEntity, errs.CodeInvalid)
	}

	// Release what p1 holds; the cell is back to its first usage.
	var released capacity.LeasesResult
	post("/v1/capacity/release", "p1", leases(p1, refs...)).ok(t, "release", &released)
	if released.Decision != capacity.Granted || released.Leases[0].State != capacity.LeaseReleased || released.Leases[1].State != capacity.LeaseReleased {
		t.Fatalf("release: %+v", released)
	}
	post("/v1/capacity/status", "p1", capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", CellID: "c", MaxCount: 1}).ok(t, "status", &st)
	for _, class := range st.Cells[0].Classes {
		if class.Used != 0 {
			t.Errorf("after every release and expiry, %s uses %d", class.ResourceClass, class.Used)
		}
	}
	c.WaitConverged(10 * time.Second)
}

func seventeenClasses() map[string]uint64 {
	m := map[string]uint64{}
	for i := 0; i < 17; i++ {
		m[fmt.Sprintf("k%02d", i)] = 1
	}
	return m
}

// A lease's deadline is FSM time, which every leader stamps from its own
// clock and which never goes back: a failover neither resets nor extends
// it. A lease acquired before the leader stops keeps its expires_at_ms; a
// renewal on the new leader just before the deadline succeeds only while
// FSM now < expires_at; and a lease nobody renews reads as expired (or at
// least reclaimable) once FSM time passes its deadline, never extended.
// The test moves the nodes' clocks (clustertest's Advance) rather than
// sleep: a TTL of a minute leaves the election all the time it needs, and
// the renewal lands 1.5 s of FSM time before the deadline however loaded
// the machine is.
func TestCapacityTTLAcrossLeaderChange(t *testing.T) {
	const ttl = 60_000
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	follower := (leader + 1) % c.Size()
	svcOn := func(i int) *capacity.Service { n := c.Node(i); return capacity.NewService(n, n) }
	ctx := context.Background()
	if _, err := svcOn(follower).UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t",
		Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"x": 10}}}); err != nil {
		t.Fatal(err)
	}
	got, err := svcOn(follower).Acquire(ctx, capacity.AcquireRequest{SchemaVersion: "1", TenantRef: "t", WorkItemID: "w", OwnerDigest: "o",
		IdempotencyKey: "ttl", TTLMs: ttl, Demands: []capacity.Demand{{CellID: "c", ResourceClass: "x", Amount: 1}, {CellID: "c", ResourceClass: "x", Amount: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	renewed, left := got.Leases[0], got.Leases[1]
	deadline := renewed.ExpiresAtMs
	if deadline != got.NowMs+ttl || left.ExpiresAtMs != deadline {
		t.Fatalf("acquired at %d with TTL %d: deadlines %d and %d", got.NowMs, ttl, renewed.ExpiresAtMs, left.ExpiresAtMs)
	}
	c.Stop(leader)
	newLeader := c.WaitLeader(10 * time.Second)
	t.Logf("leader n%d stopped; n%d leads, %d ms of FSM time before the deadline", leader+1, newLeader+1, deadline-c.Node(newLeader).FSM().Now())

	// reads checks every node's view of the leases; a view may be behind,
	// but never shows a lease ended before its deadline or a deadline
	// other than the one it was granted (or renewed to).
	lookup := func(i int, id string, consistency fsm.Consistency) (*capacity.Lease, int64) {
		t.Helper()
		res, err := svcOn(i).Reconcile(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", LeaseID: id, MaxCount: 1}, consistency)
		if err != nil || len(res.Leases) != 1 {
			t.Fatalf("lease %s on n%d: %+v %v", id, i+1, res, err)
		}
		return &res.Leases[0], res.NowMs
	}
	checkLeft := func(i int, consistency fsm.Consistency) *capacity.Lease {
		t.Helper()
		l, now := lookup(i, left.LeaseID, consistency)
		switch {
		case l.ExpiresAtMs != deadline:
			t.Errorf("n%d: the lease nobody renewed expires at %d, it was granted %d", i+1, l.ExpiresAtMs, deadline)
		case l.State == capacity.LeaseExpired && l.EndedAtMs < deadline:
			t.Errorf("n%d: the lease ended at %d, before its deadline %d", i+1, l.EndedAtMs, deadline)
		case l.State != capacity.LeaseActive && l.State != capacity.LeaseExpired:
			t.Errorf("n%d: the lease is %s", i+1, l.State)
		case now < deadline && l.State != capacity.LeaseActive:
			t.Errorf("n%d: the lease is %s at FSM time %d, before its deadline %d", i+1, l.State, now, deadline)
		}
		return l
	}
	for _, i := range c.Running() {
		checkLeft(i, fsm.Linearizable)
	}

	// Renew one lease 1.5 s before the deadline, on the new leader.
	_, now := lookup(follower, left.LeaseID, fsm.Linearizable)
	c.Advance(time.Duration(deadline-1500-now) * time.Millisecond)
	rn, err := svcOn(follower).Renew(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "o",
		Leases: []capacity.LeaseRef{{LeaseID: renewed.LeaseID, LeaseEpoch: 1, Fence: renewed.Fence}}})
	switch {
	case rn == nil:
		t.Fatalf("renew before the deadline: %v", err)
	case rn.NowMs < deadline && (rn.Decision != capacity.Granted || rn.Leases[0].ExpiresAtMs != rn.NowMs+ttl):
		t.Fatalf("renew at FSM time %d, before the deadline %d: %+v %v", rn.NowMs, deadline, rn, err)
	case rn.NowMs >= deadline && (rn.Decision != capacity.Expired || !errors.Is(err, errs.Expired)):
		t.Fatalf("renew at FSM time %d, at or after the deadline %d: %+v %v", rn.NowMs, deadline, rn, err)
	case rn.NowMs >= deadline:
		t.Logf("the renewal reached the log only at FSM time %d, after the deadline %d: refused as it must be", rn.NowMs, deadline)
	}

	// Watch the other lease through its deadline, then past it: every
	// Advance moves FSM time 250 ms or more, so about ten rounds.
	for _, now := lookup(follower, left.LeaseID, fsm.Linearizable); now < deadline+1000; _, now = lookup(follower, left.LeaseID, fsm.Linearizable) {
		checkLeft(follower, fsm.Linearizable)
		c.Advance(250 * time.Millisecond)
	}
	l := checkLeft(follower, fsm.Linearizable)
	res, err := svcOn(follower).Renew(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "o",
		Leases: []capacity.LeaseRef{{LeaseID: left.LeaseID, LeaseEpoch: 1, Fence: left.Fence}}})
	if !errors.Is(err, errs.Expired) || res == nil || res.Decision != capacity.Expired {
		t.Fatalf("renew of the lease past its deadline (%s): %+v %v", l.State, res, err)
	}
	if _, err := svcOn(follower).Reclaim(ctx, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 10}); err != nil {
		t.Fatal(err)
	}
	if l := checkLeft(follower, fsm.Linearizable); l.State != capacity.LeaseExpired {
		t.Fatalf("after a reclaim past its deadline the lease is %s", l.State)
	}
	st, err := svcOn(follower).Status(ctx, capacity.ReadRequest{SchemaVersion: "1", TenantRef: "t", CellID: "c", MaxCount: 1}, fsm.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	want := uint64(0)
	if rn.Decision == capacity.Granted {
		want = renewed.Amount
	}
	if used := st.Cells[0].Classes[0].Used; used != want {
		t.Errorf("past the deadline the cell uses %d, want %d (the renewed lease only)", used, want)
	}

	c.Restart(leader)
	c.WaitConverged(15 * time.Second)
	for _, i := range c.Running() {
		if l := checkLeft(i, fsm.Stale); l.State != capacity.LeaseExpired {
			t.Errorf("n%d: the lease is %s after the cluster converged", i+1, l.State)
		}
	}
}

// Issue 40 item 4, end to end: a keyed capacity command's idempotency key
// is the tenant's (graph, tenant, key), whoever of the tenant sends it.
// Over HTTP on a cluster of today's binary (which enables the
// tenant-keyed versions), p2 repeating p1's acquire gets p1's grant,
// replayed; p2's own request under the key is idempotency_conflict; a
// principal of another tenant is refused; a keyed renewal alike.
func TestCapacityKeysAreTheTenants(t *testing.T) {
	c := capHCluster(t)
	leader := c.WaitLeader(10 * time.Second)
	base := apiBase(c, (leader+1)%c.Size())
	post := func(route, who string, v any) apiReply { t.Helper(); return capHPost(t, base, route, who, v) }
	p1, p2 := capacity.OwnerDigest("p1"), capacity.OwnerDigest("p2")
	post("/v1/capacity/cells", "ctl", capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: "t",
		Cell: capacity.CellSpec{CellID: "c", Capacities: map[string]uint64{"gpu": 4}}}).ok(t, "cells", nil)
	acq := func(owner string) capacity.AcquireRequest {
		return capacity.AcquireRequest{SchemaVersion: "1", TenantRef: "t", WorkItemID: "w", OwnerDigest: owner,
			IdempotencyKey: "shared", TTLMs: 600_000, Demands: []capacity.Demand{{CellID: "c", ResourceClass: "gpu", Amount: 1}}}
	}
	var first, again capacity.AcquireResult
	post("/v1/capacity/acquire", "p1", acq(p1)).ok(t, "acquire by p1", &first)
	c.Unchanged(t, "p1's acquire repeated by p2", func() {
		post("/v1/capacity/acquire", "p2", acq(p1)).ok(t, "p1's acquire repeated by p2", &again)
	})
	if !again.Replayed || len(again.Leases) != 1 || again.Leases[0].LeaseID != first.Leases[0].LeaseID || again.Leases[0].Fence != first.Leases[0].Fence {
		t.Fatalf("p1's acquire repeated by p2: %+v, want %+v replayed", again, first)
	}
	c.Unchanged(t, "p2's own acquire under the key", func() {
		capHRefused(t, "p2's own acquire under the key", post("/v1/capacity/acquire", "p2", acq(p2)), http.StatusConflict, errs.CodeIdempotencyConflict)
	})
	c.Unchanged(t, "the acquire by a member of tenant u", func() {
		capHRefused(t, "the acquire by a member of tenant u", post("/v1/capacity/acquire", "ou", acq(p1)), http.StatusForbidden, errs.CodeForbidden)
	})
	renew := capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: p1, Leases: first.Refs(), IdempotencyKey: "rk"}
	var renewed, renewedAgain capacity.LeasesResult
	post("/v1/capacity/renew", "p1", renew).ok(t, "renew by p1", &renewed)
	c.Unchanged(t, "p1's renewal repeated by p2", func() {
		post("/v1/capacity/renew", "p2", renew).ok(t, "p1's renewal repeated by p2", &renewedAgain)
	})
	if !renewedAgain.Replayed || renewedAgain.Leases[0].LeaseEpoch != renewed.Leases[0].LeaseEpoch {
		t.Fatalf("p1's renewal repeated by p2: %+v, want %+v replayed", renewedAgain, renewed)
	}
}
