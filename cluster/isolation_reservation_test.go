package cluster_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/workitem"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// isoReservationRows are the matrix rows of host resource reservation,
// with their fixtures: a profile, a host with telemetry, items of tenant
// a that mem-a claimed (one to reserve, one holding a reservation to
// release) and an item without the extension for the admin rewrite.
// Records charge no fairness cost, so no debt decays under the other
// rows' "nothing changed" checks.
func isoReservationRows(t *testing.T, c *clustertest.Cluster, follower int) []isoRoute {
	t.Helper()
	do := func(who, method, path string, body any) isoReply {
		t.Helper()
		return isoDo(t, isoClient, method, isoURL(c, follower, path), isoToken(who), body)
	}
	must := func(what string, r isoReply, out any) {
		t.Helper()
		if r.status/100 != 2 || r.code != "" {
			t.Fatalf("setup %s: %s", what, r)
		}
		if out != nil {
			if err := json.Unmarshal(r.body, out); err != nil {
				t.Fatalf("setup %s: %v", what, err)
			}
		}
	}
	profile := workitem.Profile{Name: "iso", Version: "1", Weights: workitem.Weights{CPU: 1, Memory: 1, Disk: 1, Process: 1},
		Max:      workitem.Dimensions{CPUMillis: 1000, MemoryMiB: 1000, DiskMiB: 1000, Processes: 10},
		Fairness: workitem.FairnessPolicy{MaxDebt: 10, DecayPerS: 1}, Disk: workitem.DiskPolicy{MinFreeMiB: 1},
		TelemetryMaxAgeMs: 3_600_000, Mode: workitem.ModeEnabled}
	profiles := workitem.ProfilesRequest{Profiles: []workitem.Profile{profile}}
	must("profiles", do("admin", http.MethodPut, "/v1/workitems/profiles", profiles), nil)
	capacity := workitem.Dimensions{CPUMillis: 8000, MemoryMiB: 8000, DiskMiB: 8000, Processes: 8}
	must("host", do("admin", http.MethodPost, "/v1/workitems/hosts", workitem.PutHostRequest{HostID: "iso-h", Capacity: capacity}), nil)
	must("telemetry", do("admin", http.MethodPost, "/v1/workitems/hosts/telemetry", workitem.TelemetryRequest{HostID: "iso-h", ReportSeq: 1, DiskFreeMiB: 8000}), nil)
	_, record, err := extension.Seal(extension.Extension{Profile: extension.ProfileRef{Name: "iso", Version: "1"},
		Dimensions:  workitem.Dimensions{CPUMillis: 100, MemoryMiB: 100, DiskMiB: 100, Processes: 1},
		Concurrency: extension.Concurrency{Key: "iso", Limit: 10}, Repository: "iso-repo", Fairness: extension.Fairness{Group: "iso", Cost: 0}})
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]workitem.ClaimResult{}
	for _, id := range []string{"iso-rs-reserve", "iso-rs-release", "iso-rs-legacy"} {
		req := workitem.SubmitRequest{TenantRef: "a", GraphRef: "iso-rs", WorkItemID: id, IdempotencyKey: "k-" + id, CommandDigest: isoDigest(id),
			Kind: "rs", InputRef: "in", PolicyDigest: isoDigest(id), CatalogDigest: isoDigest(id), ModelDigest: isoDigest(id), MaxAttempts: 1, MaxTenantInFlight: 100}
		if id != "iso-rs-legacy" {
			req.Metadata, _ = json.Marshal(map[string]json.RawMessage{"resource_reservation": record})
		}
		must("submit "+id, do("mem-a", http.MethodPost, "/v1/workitems/submit", req), nil)
		if id == "iso-rs-legacy" {
			continue
		}
		var cl workitem.ClaimResult
		must("claim "+id, do("mem-a", http.MethodPost, "/v1/workitems/claim", workitem.ClaimRequest{TenantRef: "a", GraphRef: "iso-rs",
			OwnerRef: "mem-a", WorkItemID: id, TTLMs: 3_600_000}), &cl)
		claims[id] = cl
	}
	holder := func(id string) workitem.ReserveRequest {
		return workitem.ReserveRequest{TenantRef: "a", WorkItemID: id, Attempt: claims[id].Attempt, Fence: claims[id].Fence}
	}
	var held workitem.ReservationResult
	must("reserve", do("mem-a", http.MethodPost, "/v1/workitems/reserve", holder("iso-rs-release")), &held)

	// view is the admin's query, without what moves with the clock.
	view := func(q workitem.QueryRequest) func(*testing.T) string {
		return func(t *testing.T) string {
			q.TenantRef, q.MaxCount = "a", 128
			r := isoDo(t, isoClient, http.MethodPost, isoURL(c, follower, "/v1/workitems/reservations/query"), isoToken("admin"), q)
			var res workitem.QueryResult
			if r.status != http.StatusOK || json.Unmarshal(r.body, &res) != nil {
				return r.String()
			}
			res.NowMs = 0
			for i := range res.Hosts {
				res.Hosts[i].TelemetryAgeMs = 0
			}
			out, _ := json.Marshal(res)
			return string(out)
		}
	}
	forbidden := func(body any, who ...string) []isoCase {
		var out []isoCase
		for _, w := range who {
			out = append(out, isoCase{name: w, who: w, body: body, status: http.StatusForbidden, code: "forbidden"})
		}
		return out
	}
	ok := func(who string, body any, status int) isoCase {
		return isoCase{name: who, who: who, body: body, status: status, ok: true}
	}
	otherOwner := func(who string, body any) isoCase {
		return isoCase{name: who + " (another owner)", who: who, body: body, refused: true}
	}
	newHost := workitem.PutHostRequest{HostID: "iso-h-new", Capacity: capacity}
	report := workitem.TelemetryRequest{HostID: "iso-h", ReportSeq: 2, DiskFreeMiB: 7000}
	more := workitem.ProfilesRequest{Profiles: []workitem.Profile{profile, {Name: "iso-draft", Version: "1"}}}
	release := workitem.ReleaseRequest{TenantRef: "a", WorkItemID: "iso-rs-release", Attempt: claims["iso-rs-release"].Attempt,
		Fence: claims["iso-rs-release"].Fence, ReservationID: held.Reservation.ReservationID}
	reclaim := workitem.ReclaimRequest{TenantRef: "a", MaxCount: 10}
	query := workitem.QueryRequest{TenantRef: "a", MaxCount: 10}
	rewrite := workitem.RewriteExtensionRequest{TenantRef: "a", WorkItemID: "iso-rs-legacy", Fence: 0, Extension: record}
	return []isoRoute{
		{route: "POST /v1/workitems/hosts", access: isoPrincipal,
			// Hosts are every tenant's: a controller of one may not.
			wrongTenant: forbidden(newHost, "mem-b", "ctl-a"), wrongRole: forbidden(newHost, "mem-a", "read-a"),
			valid: ok("admin", newHost, 201), state: view(workitem.QueryRequest{HostID: "iso-h-new"})},
		// Hosts are every tenant's: any reader of the tenant named lists
		// them; a principal outside it hears not_found.
		{route: "GET /v1/workitems/hosts", query: "?tenant_ref=a&limit=10", access: isoPrincipal,
			wrongTenant: []isoCase{{name: "mem-b", who: "mem-b", status: http.StatusNotFound, code: "not_found"}},
			valid:       ok("read-a", nil, 200)},
		{route: "POST /v1/workitems/hosts/telemetry", access: isoPrincipal,
			wrongTenant: forbidden(report, "mem-b", "ctl-a"), wrongRole: forbidden(report, "mem-a", "read-a"),
			valid: ok("admin", report, 200), state: view(workitem.QueryRequest{HostID: "iso-h"})},
		{route: "PUT /v1/workitems/profiles", access: isoAdmin, body: func(string) any { return more },
			valid: ok("admin", more, 200), state: func(t *testing.T) string { return isoAdminGet(t, c, follower, "/v1/workitems/profiles") }},
		{route: "GET /v1/workitems/profiles", access: isoPrincipal, valid: ok("read-a", nil, 200)},
		{route: "POST /v1/workitems/reserve", access: isoPrincipal,
			wrongTenant: forbidden(holder("iso-rs-reserve"), "mem-b"),
			wrongRole:   append(forbidden(holder("iso-rs-reserve"), "read-a"), otherOwner("mem-a2", holder("iso-rs-reserve"))),
			valid:       ok("mem-a", holder("iso-rs-reserve"), 200), state: view(workitem.QueryRequest{WorkItemID: "iso-rs-reserve"})},
		{route: "POST /v1/workitems/release", access: isoPrincipal,
			wrongTenant: forbidden(release, "mem-b"),
			wrongRole:   append(forbidden(release, "read-a"), otherOwner("mem-a2", release)),
			valid:       ok("mem-a", release, 200), state: view(workitem.QueryRequest{WorkItemID: "iso-rs-release"})},
		{route: "POST /v1/workitems/reclaim", access: isoPrincipal,
			wrongTenant: forbidden(reclaim, "mem-b"),
			// Reclaiming every tenant's takes a controller of every tenant.
			wrongRole: append(forbidden(reclaim, "read-a"), forbidden(workitem.ReclaimRequest{MaxCount: 10}, "ctl-a")...),
			valid:     ok("mem-a", reclaim, 200), state: view(workitem.QueryRequest{}), noEffect: true},
		{route: "POST /v1/workitems/reservations/query", access: isoPrincipal,
			wrongTenant: []isoCase{{name: "mem-b", who: "mem-b", body: query, status: http.StatusNotFound, code: "not_found"}},
			valid:       ok("read-a", query, 200)},
		{route: "POST /v1/workitems/extension", access: isoPrincipal,
			wrongTenant: forbidden(rewrite, "mem-b"), wrongRole: forbidden(rewrite, "ctl-a", "mem-a", "read-a"),
			valid: ok("admin", rewrite, 200), state: func(t *testing.T) string {
				return isoAdminGet(t, c, follower, "/v1/workitems/get?tenant_ref=a&work_item_id=iso-rs-legacy")
			}},
	}
}
