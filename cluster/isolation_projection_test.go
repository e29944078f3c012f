package cluster_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/projection"
)

// isoDigest is sha256:<hex> of s.
func isoDigest(s string) string { return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(s))) }

// isoNowMs strips the read time from a projection view.
var isoNowMs = regexp.MustCompile(`"now_ms":\d+`)

// isoProjectionRows are the matrix rows of the projection routes. mem-a is
// the agent of every target, mem-a2 the producer of its route channel;
// projection targets belong to principals, not tenants, so a member of
// another tenant is refused as any stranger is (403 on writes, 404 on
// reads). Fixtures: lease_ttl_ms, a target to acquire, one with a held
// lease to publish with, one with a held lease to release, and one with
// a publication to read.
func isoProjectionRows(t *testing.T, c *clustertest.Cluster, follower int) []isoRoute {
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
	must("lease_ttl_ms", do("admin", http.MethodPut, "/v1/projection/config", projection.ConfigRequest{LeaseTTLMs: 600_000}), nil)
	target := func(kind string) projection.TargetRequest {
		return projection.TargetRequest{Attested: projection.Attested{SchemaVersion: "1", Capability: "hooks", HarnessType: "iso",
			InstanceKeyDigest: isoDigest("i"), WorkspaceKeyDigest: isoDigest("w"), ProjectionKind: kind},
			Channels: []projection.ChannelBinding{{Channel: projection.ChannelComputedRoute, Producer: "mem-a2"}}}
	}
	ids := map[string]string{}
	for _, kind := range []string{"acquire", "publish", "release", "read"} {
		var res projection.TargetResult
		must("target "+kind, do("mem-a", http.MethodPost, "/v1/projection/targets", target(kind)), &res)
		ids[kind] = res.TargetID
	}
	leases := map[string]projection.Lease{}
	for _, kind := range []string{"publish", "release", "read"} {
		var l projection.Lease
		must("lease "+kind, do("mem-a", http.MethodPost, "/v1/projection/leases/acquire",
			projection.AcquireRequest{TargetID: ids[kind], HolderInstanceDigest: isoDigest("holder")}), &l)
		leases[kind] = l
	}
	fence := func(kind string) projection.FenceRequest {
		return projection.FenceRequest{TargetID: ids[kind], Token: leases[kind].Token, FencingEpoch: leases[kind].FencingEpoch}
	}
	must("publication", do("mem-a", http.MethodPost, "/v1/projection/publish", fence("read")), nil)

	view := func(kind string) func(*testing.T) string {
		return func(t *testing.T) string {
			return isoNowMs.ReplaceAllString(isoAdminGet(t, c, follower, "/v1/projection/targets/"+ids[kind]+"?consistency=linearizable"), "")
		}
	}
	envelope := json.RawMessage(`{"schema":"computed-route.v1","not_authority":true,"watermark":3,"expires_at_ms":99999999999999,"provenance":{},"citations":[],"body":{"route":"r"}}`)
	submit := projection.SubmitRequest{TargetID: ids["read"], Channel: projection.ChannelComputedRoute, SourceWatermark: 3, Envelope: envelope}
	acquire := projection.AcquireRequest{TargetID: ids["acquire"], HolderInstanceDigest: isoDigest("holder")}
	wantForbidden := func(body any, who ...string) []isoCase {
		var out []isoCase
		for _, w := range who {
			out = append(out, isoCase{name: w, who: w, body: body, status: http.StatusForbidden, code: "forbidden"})
		}
		return out
	}
	notFound := isoCase{name: "mem-b", who: "mem-b", status: http.StatusNotFound, code: "not_found"}
	ok := func(who string, body any, status int) isoCase {
		return isoCase{name: who, who: who, body: body, status: status, ok: true}
	}
	config := func(t *testing.T) string { return isoAdminGet(t, c, follower, "/v1/projection/config") }
	return []isoRoute{
		{route: "PUT /v1/projection/config", access: isoAdmin, body: func(string) any { return projection.ConfigRequest{LeaseTTLMs: 300_000} },
			valid: ok("admin", projection.ConfigRequest{LeaseTTLMs: 300_000}, 200), state: config},
		{route: "GET /v1/projection/config", access: isoPrincipal, valid: ok("read-a", nil, 200)},
		{route: "POST /v1/projection/targets", access: isoPrincipal,
			// Another tenant's member may not register for mem-a.
			wrongTenant: []isoCase{{name: "mem-b for mem-a", who: "mem-b", body: projection.TargetRequest{AgentID: "mem-a", Attested: target("new").Attested, Channels: target("new").Channels},
				status: http.StatusForbidden, code: "forbidden"}},
			wrongRole: wantForbidden(target("new"), "read-a"),
			valid:     ok("mem-a", target("new"), 201),
			state: func(t *testing.T) string {
				id, _ := projection.DeriveTargetID("mem-a", target("new").Attested)
				return isoAdminGet(t, c, follower, "/v1/projection/targets/"+id)
			}},
		{route: "GET /v1/projection/targets/{target_id}", path: "/v1/projection/targets/" + ids["read"], access: isoPrincipal,
			wrongTenant: []isoCase{notFound}, wrongRole: []isoCase{{name: "read-a", who: "read-a", status: http.StatusNotFound, code: "not_found"}},
			valid: ok("mem-a2", nil, 200)},
		{route: "GET /v1/projection/targets/{target_id}/current", path: "/v1/projection/targets/" + ids["read"] + "/current", access: isoPrincipal,
			wrongTenant: []isoCase{notFound}, valid: ok("mem-a", nil, 200)},
		{route: "POST /v1/projection/channels/submit", access: isoPrincipal,
			wrongTenant: wantForbidden(submit, "mem-b"), wrongRole: wantForbidden(submit, "read-a", "mem-a", "ctl-a"),
			valid: ok("mem-a2", submit, 200), state: view("read")},
		{route: "POST /v1/projection/leases/acquire", access: isoPrincipal,
			wrongTenant: wantForbidden(acquire, "mem-b"), wrongRole: wantForbidden(acquire, "read-a", "mem-a2", "ctl-a"),
			valid: ok("mem-a", acquire, 200), state: view("acquire")},
		{route: "POST /v1/projection/publish", access: isoPrincipal,
			wrongTenant: wantForbidden(fence("publish"), "mem-b"), wrongRole: wantForbidden(fence("publish"), "read-a", "mem-a2", "ctl-a"),
			valid: ok("mem-a", fence("publish"), 200), state: view("publish")},
		{route: "POST /v1/projection/leases/release", access: isoPrincipal,
			wrongTenant: wantForbidden(fence("release"), "mem-b"), wrongRole: wantForbidden(fence("release"), "read-a", "mem-a2", "ctl-a"),
			valid: ok("mem-a", fence("release"), 200), state: view("release")},
	}
}
