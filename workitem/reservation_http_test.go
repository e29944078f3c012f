package workitem_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/domain/builtin"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// oldDomains are the built-in domains of a binary from before host
// resource reservation: workitem without commands 310-316 and with
// submit version 1 only.
func oldDomains() []domain.Domain {
	out := builtin.Domains()
	for i, d := range out {
		if d.Name != workitem.Name {
			continue
		}
		d.Flags, d.Load, d.Start = nil, nil, nil
		d.Module = func() fsm.Module {
			m := workitem.Module()
			var cmds []fsm.CommandSpec
			for _, c := range m.Commands {
				if c.Type < workitem.CmdPutHost {
					c.MaxVersion = 1
					c.LedgerTenant, c.LedgerTenantFrom, c.LedgerLegacyScope = nil, 0, nil // not yet
					cmds = append(cmds, c)
				}
			}
			m.Commands = cmds
			return m
		}
		out[i] = d
	}
	return out
}

// resHTTP is the reservation HTTP test's cluster: three nodes with
// authentication (httpPrincipals), no periodic ticks, n3 running the
// old binary until upgrade.
type resHTTP struct {
	*httpFixture
	upgraded bool
}

func newResHTTP(t *testing.T) *resHTTP {
	var cfgs []identity.PrincipalConfig
	for _, p := range httpPrincipals {
		p.TokenSHA256 = []string{identity.HashToken(httpToken(p.ID))}
		cfgs = append(cfgs, p)
	}
	reg, err := identity.NewRegistry(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	r := &resHTTP{}
	c := clustertest.New(t, clustertest.Options{Nodes: 3, Principals: reg, NoWaitEnabled: true,
		Domains: func(i int) []domain.Domain {
			if i == 2 && !r.upgraded {
				return oldDomains()
			}
			return builtin.Domains()
		},
		Configure: func(i int, cfg *cluster.Config) { cfg.TickInterval = time.Hour }})
	r.httpFixture = &httpFixture{t: t, c: c}
	r.point()
	return r
}

// point aims the fixture at the current leader and a follower.
func (r *resHTTP) point() {
	leader := r.c.WaitLeader(20 * time.Second)
	r.leaderIndex, r.leader = leader, r.c.URL(leader)
	r.base = r.c.URL((leader + 1) % r.c.Size())
}

// waitEnabled waits until every node enables what want serves.
func (r *resHTTP) waitEnabled(want fsm.Capabilities) {
	r.t.Helper()
	var served []fsm.Capabilities
	for i := range r.c.Size() {
		served = append(served, r.c.Node(i).FSM().Served())
	}
	if have := fsm.Intersect(served...); !have.Equal(want) {
		r.t.Fatalf("the nodes serve %s together, want %s", have, want)
	}
	// WaitEnabled also waits for what a cluster writes on its own right
	// after a new set (the first tick under it, the cluster id), which
	// would otherwise land inside an Unchanged check.
	r.c.WaitEnabled(30 * time.Second)
}

// call posts v to route as who and requires status; it decodes the
// answer into out, or returns the error envelope.
func (r *resHTTP) call(what, method, route, who string, v any, status int, out any) envelope {
	r.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		r.t.Fatal(err)
	}
	if raw, ok := v.([]byte); ok {
		b = raw
	}
	rep := r.do(method, r.base+"/v1/workitems/"+route, who, b)
	if rep.status != status {
		r.t.Fatalf("%s: %d %s, want %d", what, rep.status, rep.body, status)
	}
	if status >= 300 {
		return rep.err(r.t)
	}
	if out != nil {
		if err := json.Unmarshal(rep.body, out); err != nil {
			r.t.Fatalf("%s: %v in %s", what, err, rep.body)
		}
	}
	return envelope{}
}

// refused requires a refusal that changes nothing (clustertest's
// Unchanged: the leader's content hash before and after).
func (r *resHTTP) refused(what, method, route, who string, v any, status int, code errs.Code, reason string) envelope {
	r.t.Helper()
	var e envelope
	r.c.Unchanged(r.t, what, func() { e = r.call(what, method, route, who, v, status, nil) })
	if e.Error.Code != code || (reason != "" && e.Error.Detail["reason"] != reason) {
		r.t.Fatalf("%s: %s %v, want %s %s", what, e.Error.Code, e.Error.Detail, code, reason)
	}
	return e
}

// item submits item id with extension e (nil: none) and claims it as p1
// for ttl; it returns the claim.
func (r *resHTTP) item(id string, e *extension.Extension, ttl time.Duration) workitem.ClaimResult {
	r.t.Helper()
	meta := map[string]any{}
	if e != nil {
		_, raw, err := extension.Seal(*e)
		if err != nil {
			r.t.Fatal(err)
		}
		meta["resource_reservation"] = json.RawMessage(raw)
	}
	r.call("submit "+id, http.MethodPost, "submit", "p1", body("k-"+id, map[string]any{"work_item_id": id, "metadata": meta}), http.StatusCreated, nil)
	var c workitem.ClaimResult
	r.call("claim "+id, http.MethodPost, "claim", "p1", workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: id, TTLMs: ttl.Milliseconds()}, http.StatusOK, &c)
	return c
}

func resReq(c workitem.ClaimResult, host string) workitem.ReserveRequest {
	return workitem.ReserveRequest{TenantRef: "t", WorkItemID: c.WorkItem.WorkItemID, Attempt: c.Attempt, Fence: c.Fence, HostID: host}
}

// TestHTTPReservations drives host resource reservation over HTTP on a
// 3-node cluster: gated while a member runs a binary without it, then
// every route, every refusal reason (409 with detail.reason, the content
// hash unchanged), the claim's own refusals, claim expiry freeing a
// host through reclaim, and a profile switched to dark refusing reserve
// while the query still answers.
func TestHTTPReservations(t *testing.T) {
	r := newResHTTP(t)
	old := fsm.Intersect(domain.Served(builtin.Domains()), domain.Served(oldDomains()))
	r.waitEnabled(old)

	// A mixed-version cluster refuses the new commands everywhere and
	// keeps an extension as opaque metadata (submit version 1).
	r.refused("profiles while a member lacks them", http.MethodPut, "profiles", "ops", workitem.ProfilesRequest{}, http.StatusServiceUnavailable, errs.CodeUnavailable, "")
	tamperedExt := baseExt()
	_, raw, _ := extension.Seal(tamperedExt)
	tampered := tamper(raw)
	// (Straight to the log: this binary's service checks the record before
	// it proposes, whatever the cluster enables; an older client does not.)
	if err := rawSubmitMeta(r.c.Node(r.leaderIndex), "tampered", `{"resource_reservation":`+string(tampered)+`}`); err != nil {
		t.Fatalf("submit tampered: %v", err)
	}
	r.call("submit legacy", http.MethodPost, "submit", "p1", body("k-legacy", map[string]any{"work_item_id": "legacy"}), http.StatusCreated, nil)

	// n3 upgrades: the cluster enables everything.
	r.c.Stop(2)
	r.upgraded = true
	r.c.Restart(2)
	r.waitEnabled(domain.Served(builtin.Domains()))
	r.point()

	r.setup()
	r.refusals(tampered)
	r.lifecycle()
}

func (r *resHTTP) setup() {
	p := completeProfile("p", "v1")
	p.TelemetryMaxAgeMs = 600_000
	quick := completeProfile("quick", "v1")
	quick.TelemetryMaxAgeMs = 1000
	inc := completeProfile("inc", "v1")
	inc.Disk.MinFreeMiB = 0
	dark, shadow := completeProfile("dark", "v1"), completeProfile("shadow", "v1")
	dark.Mode, shadow.Mode = workitem.ModeDark, workitem.ModeShadow
	set := workitem.ProfilesRequest{Profiles: []workitem.Profile{p, quick, inc, dark, shadow}}
	r.refused("profiles by a member", http.MethodPut, "profiles", "p1", set, http.StatusForbidden, errs.CodeForbidden, "")
	var ps workitem.ProfilesResult
	r.call("profiles", http.MethodPut, "profiles", "ops", set, http.StatusOK, &ps)
	if !ps.Changed || len(ps.Profiles) != 5 {
		r.t.Fatalf("profiles: %+v", ps)
	}
	rep := r.do(http.MethodGet, r.base+"/v1/workitems/profiles", "rd", nil)
	if rep.status != http.StatusOK {
		r.t.Fatalf("read profiles: %d %s", rep.status, rep.body)
	}
	capacity := workitem.Dimensions{CPUMillis: 8000, MemoryMiB: 16384, DiskMiB: 102400, Processes: 8}
	for _, h := range []workitem.PutHostRequest{
		{HostID: "h1", Labels: map[string]string{"zone": "a"}, Capacity: capacity},
		{HostID: "h2", Labels: map[string]string{"zone": "b"}, Capacity: capacity},
		{HostID: "hq", Labels: map[string]string{"role": "q"}, Capacity: capacity},
	} {
		var res workitem.HostResult
		r.call("host "+h.HostID, http.MethodPost, "hosts", "ops", h, http.StatusCreated, &res)
		r.call("telemetry "+h.HostID, http.MethodPost, "hosts/telemetry", "ops", workitem.TelemetryRequest{HostID: h.HostID, ReportSeq: 1, DiskFreeMiB: 102400}, http.StatusOK, nil)
	}
	// A re-registration (a host agent restarting) answers created false
	// and resets the report sequence: the agent counts from 1 again.
	var again map[string]any
	r.call("host again", http.MethodPost, "hosts", "ops", workitem.PutHostRequest{HostID: "h1", Labels: map[string]string{"zone": "a"}, Capacity: capacity}, http.StatusOK, &again)
	if created, ok := again["created"]; !ok || created != false {
		r.t.Fatalf("host again: created %v (present %t), want false", created, ok)
	}
	r.call("a report after the re-registration", http.MethodPost, "hosts/telemetry", "ops", workitem.TelemetryRequest{HostID: "h1", ReportSeq: 1, DiskFreeMiB: 102400}, http.StatusOK, nil)
	r.listHosts()
	r.refused("host by a tenant's controller", http.MethodPost, "hosts", "ctl", workitem.PutHostRequest{HostID: "h9"}, http.StatusForbidden, errs.CodeForbidden, "")
	r.refused("a path as host id", http.MethodPost, "hosts", "ops", workitem.PutHostRequest{HostID: "/dev/sda"}, http.StatusUnprocessableEntity, errs.CodeInvalid, "")
	if e := r.refused("an unknown field", http.MethodPost, "hosts", "ops", []byte(`{"host_id":"h9","tenant_ref":"t"}`), http.StatusUnprocessableEntity, errs.CodeInvalid, ""); e.Error.Detail["field"] != "tenant_ref" {
		r.t.Fatalf("an unknown field: detail %v, want field tenant_ref", e.Error.Detail)
	}
	r.refused("a stale report", http.MethodPost, "hosts/telemetry", "ops", workitem.TelemetryRequest{HostID: "h1", ReportSeq: 1, DiskFreeMiB: 1}, http.StatusConflict, errs.CodeConflict, "stale_report")
}

// listHosts reads GET /v1/workitems/hosts a page of two at a time as a
// reader of tenant t; a limit
// above 128 is 422 naming limit, a principal of another tenant 404.
func (r *resHTTP) listHosts() {
	t := r.t
	var ids []string
	after := ""
	for pages := 0; pages < 3; pages++ {
		rep := r.do(http.MethodGet, r.base+"/v1/workitems/hosts?tenant_ref=t&limit=2&after="+after, "rd", nil)
		var page workitem.HostPage
		if rep.status != http.StatusOK || json.Unmarshal(rep.body, &page) != nil {
			t.Fatalf("GET hosts: %d %s", rep.status, rep.body)
		}
		for _, h := range page.Hosts {
			ids = append(ids, h.HostID)
		}
		if after = page.NextCursor; after == "" {
			break
		}
	}
	if fmt.Sprint(ids) != "[h1 h2 hq]" {
		t.Fatalf("GET hosts, pages of 2: %v, want [h1 h2 hq]", ids)
	}
	if rep := r.do(http.MethodGet, r.base+"/v1/workitems/hosts?tenant_ref=t&limit=129", "rd", nil); rep.status != http.StatusUnprocessableEntity ||
		rep.err(t).Error.Detail["field"] != "limit" {
		t.Fatalf("GET hosts, limit 129: %d %s", rep.status, rep.body)
	}
	if rep := r.do(http.MethodGet, r.base+"/v1/workitems/hosts?tenant_ref=t", "ou", nil); rep.status != http.StatusNotFound {
		t.Fatalf("GET hosts by a principal of another tenant: %d %s", rep.status, rep.body)
	}
}

func (r *resHTTP) refusals(tampered []byte) {
	t := r.t
	reserve := func(what string, c workitem.ClaimResult, host, reason string) {
		t.Helper()
		r.refused(what, http.MethodPost, "reserve", "p1", resReq(c, host), http.StatusConflict, errs.CodeConflict, reason)
	}
	ext := func(mod func(*extension.Extension)) *extension.Extension {
		e := baseExt()
		mod(&e)
		return &e
	}
	n := 0
	item := func(mod func(*extension.Extension)) workitem.ClaimResult {
		n++
		return r.item(fmt.Sprintf("r%d", n), ext(mod), time.Hour)
	}
	none := func(*extension.Extension) {}

	// 200 with the reservation.
	var first workitem.ReservationResult
	r.call("reserve", http.MethodPost, "reserve", "p1", resReq(item(func(e *extension.Extension) { e.Dimensions.CPUMillis = 7500 }), "h1"), http.StatusOK, &first)
	var keys map[string]map[string]json.RawMessage
	_ = json.Unmarshal(mustMarshal(first), &keys)
	for _, k := range []string{"reservation_id", "host_id", "dimensions", "keys", "fairness_debt_after", "expires_at_ms"} {
		if keys["reservation"][k] == nil {
			t.Errorf("the reservation lacks %q", k)
		}
	}
	reserve("capacity", item(none), "h1", workitem.RefuseCapacity)
	reserve("no_eligible_host", item(func(e *extension.Extension) { e.HostLabels = map[string]string{"zone": "z"} }), "", workitem.RefuseNoEligibleHost)
	r.call("anti-affinity holder", http.MethodPost, "reserve", "p1", resReq(item(func(e *extension.Extension) { e.AntiAffinity = []string{"gpu"}; e.BaseRef = "aa" }), "h2"), http.StatusOK, nil)
	reserve("anti_affinity", item(func(e *extension.Extension) { e.AntiAffinity = []string{"gpu"} }), "h2", workitem.RefuseAntiAffinity)
	reserve("disk_watermark", item(func(e *extension.Extension) { e.Disk.MinFreeMiB = 102400 }), "h2", workitem.RefuseDiskWatermark)
	reserve("repository_exclusive", item(func(e *extension.Extension) { e.Exclusivity.Repository = true }), "h2", workitem.RefuseRepositoryExclusive)
	reserve("branch_exclusive", item(func(e *extension.Extension) { e.Branch, e.Exclusivity.Branch = "main", true }), "h2", workitem.RefuseBranchExclusive)
	r.call("concurrency holder", http.MethodPost, "reserve", "p1", resReq(item(func(e *extension.Extension) {
		e.Concurrency, e.BaseRef = extension.Concurrency{Key: "one", Limit: 1}, "c1"
	}), "h2"), http.StatusOK, nil)
	reserve("concurrency_limit", item(func(e *extension.Extension) { e.Concurrency = extension.Concurrency{Key: "one", Limit: 1} }), "h2", workitem.RefuseConcurrencyLimit)
	reserve("fairness", item(func(e *extension.Extension) { e.Fairness.Cost = 1000 }), "h2", workitem.RefuseFairness)
	reserve("profile_disabled (dark)", item(func(e *extension.Extension) { e.Profile.Name = "dark" }), "h2", workitem.RefuseProfileDisabled)
	reserve("profile_disabled (shadow)", item(func(e *extension.Extension) { e.Profile.Name = "shadow" }), "h2", workitem.RefuseProfileDisabled)
	reserve("profile_disabled (not loaded)", item(func(e *extension.Extension) { e.Profile.Name = "nope" }), "h2", workitem.RefuseProfileDisabled)
	reserve("profile_incomplete", item(func(e *extension.Extension) { e.Profile.Name = "inc" }), "h2", workitem.RefuseProfileIncomplete)
	var tc, lc workitem.ClaimResult
	r.call("claim tampered", http.MethodPost, "claim", "p1", workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: "tampered", TTLMs: 3_600_000}, http.StatusOK, &tc)
	r.call("claim legacy", http.MethodPost, "claim", "p1", workitem.ClaimRequest{TenantRef: "t", OwnerRef: "w", WorkItemID: "legacy", TTLMs: 3_600_000}, http.StatusOK, &lc)
	reserve("fingerprint_mismatch", tc, "h2", workitem.RefuseFingerprintMismatch)
	reserve("not_reservable", lc, "h2", workitem.RefuseNotReservable)
	stale := item(func(e *extension.Extension) { e.Profile.Name, e.HostLabels = "quick", map[string]string{"role": "q"} })
	short := r.item("short", ext(func(e *extension.Extension) { e.BaseRef = "short" }), time.Second)
	// The nodes' clocks move ahead, and FSM time with the next command's
	// stamp (the fixture does not tick): the short claim expires, and the
	// quick profile's telemetry (1 s at most) is stale.
	r.c.MoveClock(1100 * time.Millisecond)
	reserve("telemetry_stale", stale, "hq", workitem.RefuseTelemetryStale)

	// The claim's own refusals, and bad requests.
	r.refused("an expired claim", http.MethodPost, "reserve", "p1", resReq(short, ""), http.StatusConflict, errs.CodeExpired, "")
	c := item(none)
	staleReq := resReq(c, "")
	staleReq.Fence--
	r.refused("a stale fence", http.MethodPost, "reserve", "p1", staleReq, http.StatusConflict, errs.CodeStaleFence, "")
	r.refused("another member", http.MethodPost, "reserve", "p2", resReq(c, ""), http.StatusForbidden, errs.CodeForbidden, "")
	r.refused("another tenant", http.MethodPost, "reserve", "ou", resReq(c, ""), http.StatusForbidden, errs.CodeForbidden, "")
	r.refused("a missing item", http.MethodPost, "reserve", "p1", workitem.ReserveRequest{TenantRef: "t", WorkItemID: "ghost", Attempt: 1, Fence: 1}, http.StatusNotFound, errs.CodeNotFound, "")
	r.refused("fence 0", http.MethodPost, "reserve", "p1", workitem.ReserveRequest{TenantRef: "t", WorkItemID: "ghost", Attempt: 1}, http.StatusUnprocessableEntity, errs.CodeInvalid, "")
	r.refused("a bad extension at submit", http.MethodPost, "submit", "p1", body("k-bad", map[string]any{"metadata": map[string]any{
		"resource_reservation": json.RawMessage(tampered)}}), http.StatusUnprocessableEntity, errs.CodeInvalid, extension.ReasonFingerprintMismatch)
	r.refused("a reclaim of every tenant by a member", http.MethodPost, "reclaim", "p1", workitem.ReclaimRequest{MaxCount: 1}, http.StatusForbidden, errs.CodeForbidden, "")
	r.refused("max_count 129", http.MethodPost, "reclaim", "p1", workitem.ReclaimRequest{TenantRef: "t", MaxCount: 129}, http.StatusUnprocessableEntity, errs.CodeInvalid, "")
	r.refused("a query of another tenant", http.MethodPost, "reservations/query", "ou", workitem.QueryRequest{TenantRef: "t", MaxCount: 1}, http.StatusNotFound, errs.CodeNotFound, "")
	r.refused("a forged cursor", http.MethodPost, "reservations/query", "rd", workitem.QueryRequest{TenantRef: "t", MaxCount: 1, Cursor: "query.AAAAAAAAAAAA"}, http.StatusUnprocessableEntity, errs.CodeInvalid, "")
	_, good, _ := extension.Seal(baseExt())
	r.refused("a rewrite by a member", http.MethodPost, "extension", "p1", workitem.RewriteExtensionRequest{TenantRef: "t", WorkItemID: "legacy", Fence: lc.Fence, Extension: good}, http.StatusForbidden, errs.CodeForbidden, "")
	r.refused("a rewrite with a tampered record", http.MethodPost, "extension", "ops", workitem.RewriteExtensionRequest{TenantRef: "t", WorkItemID: "legacy", Fence: lc.Fence, Extension: tampered}, http.StatusUnprocessableEntity, errs.CodeInvalid, extension.ReasonFingerprintMismatch)
	r.refused("a rewrite at another fence", http.MethodPost, "extension", "ops", workitem.RewriteExtensionRequest{TenantRef: "t", WorkItemID: "legacy", Fence: lc.Fence - 1, Extension: good}, http.StatusConflict, errs.CodeStaleFence, "")
	r.call("rewrite", http.MethodPost, "extension", "ops", workitem.RewriteExtensionRequest{TenantRef: "t", WorkItemID: "legacy", Fence: lc.Fence, Extension: good}, http.StatusOK, nil)
}

// lifecycle: release (fenced), claim expiry freeing a host through
// reclaim, a profile switched to dark refusing reserve while the query
// answers.
func (r *resHTTP) lifecycle() {
	t := r.t
	a := r.item("life-a", func() *extension.Extension { e := baseExt(); e.BaseRef = "la"; return &e }(), 1500*time.Millisecond)
	var res workitem.ReservationResult
	r.call("reserve life-a", http.MethodPost, "reserve", "p1", resReq(a, "hq"), http.StatusOK, &res)
	query := func(who string) workitem.QueryResult {
		var q workitem.QueryResult
		r.call("query", http.MethodPost, "reservations/query", who, workitem.QueryRequest{TenantRef: "t", HostID: "hq", MaxCount: 128}, http.StatusOK, &q)
		return q
	}
	if q := query("rd"); len(q.Hosts) != 1 || q.Hosts[0].Used.CPUMillis != 1000 || len(q.Reservations) != 1 {
		t.Fatalf("query before expiry: %+v", q)
	}
	r.c.MoveClock(1600 * time.Millisecond) // past the claim's 1.5 s: the reclaim's stamp carries it
	var rc workitem.ReclaimResult
	r.call("reclaim", http.MethodPost, "reclaim", "p1", workitem.ReclaimRequest{TenantRef: "t", HostID: "hq", MaxCount: 10}, http.StatusOK, &rc)
	if len(rc.ReclaimedIDs) != 1 || rc.ReclaimedIDs[0] != res.Reservation.ReservationID {
		t.Fatalf("reclaim: %+v", rc)
	}
	if q := query("rd"); q.Hosts[0].Used != (workitem.Dimensions{}) || q.Reservations[0].Status != workitem.ReservationEnded {
		t.Fatalf("query after the claim expired: %+v", q)
	}
	r.refused("a release by the expired holder after reclaim", http.MethodPost, "release", "p1", workitem.ReleaseRequest{TenantRef: "t",
		WorkItemID: "life-a", Attempt: a.Attempt, Fence: a.Fence + 1, ReservationID: res.Reservation.ReservationID}, http.StatusConflict, errs.CodeStaleFence, "")

	b := r.item("life-b", func() *extension.Extension { e := baseExt(); e.BaseRef = "lb"; return &e }(), time.Hour)
	r.call("reserve life-b", http.MethodPost, "reserve", "p1", resReq(b, "hq"), http.StatusOK, &res)
	rel := workitem.ReleaseRequest{TenantRef: "t", WorkItemID: "life-b", Attempt: b.Attempt, Fence: b.Fence, ReservationID: res.Reservation.ReservationID}
	r.refused("a release by another member", http.MethodPost, "release", "p2", rel, http.StatusForbidden, errs.CodeForbidden, "")
	r.call("release", http.MethodPost, "release", "p1", rel, http.StatusOK, &res)
	if res.Reservation.Status != workitem.ReservationReleased {
		t.Fatalf("release: %+v", res.Reservation)
	}

	// The profile goes dark: reserve is refused, the query answers.
	p := completeProfile("p", "v1")
	p.TelemetryMaxAgeMs, p.Mode = 600_000, workitem.ModeDark
	r.call("profiles dark", http.MethodPut, "profiles", "ops", workitem.ProfilesRequest{Profiles: []workitem.Profile{p}}, http.StatusOK, nil)
	c := r.item("life-c", func() *extension.Extension { e := baseExt(); e.BaseRef = "lc"; return &e }(), time.Hour)
	r.refused("reserve under a dark profile", http.MethodPost, "reserve", "p1", resReq(c, ""), http.StatusConflict, errs.CodeConflict, workitem.RefuseProfileDisabled)
	if q := query("rd"); len(q.Reservations) != 2 || len(q.Hosts) != 1 {
		t.Fatalf("the query under a dark profile: %+v", q)
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
