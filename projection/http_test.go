package projection_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/projection"
)

func keys(t *testing.T, b []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The HTTP API over three nodes with authentication: every route's exact
// status and error code, each refusal changing nothing (the leader's
// state hash without bookkeeping), and files on every node with a root.
func TestHTTPRoutes(t *testing.T) {
	pc := newPCluster(t, roots(t, 3), clustertest.Options{})
	put, post, get := http.MethodPut, http.MethodPost, http.MethodGet

	// Configuration: admins only, no default, strict bodies.
	var cfg projection.Config
	pc.call(2, reader.ID, get, "/v1/projection/config", nil).want(t, "config before", 200, "", &cfg)
	if cfg.Configured || cfg.LeaseTTLMs != 0 {
		t.Fatalf("a new cluster is configured: %+v", cfg)
	}
	for _, tc := range []struct {
		name   string
		who    string
		body   any
		status int
		code   errs.Code
	}{
		{"no credential", "", projection.ConfigRequest{LeaseTTLMs: 1000}, 401, errs.CodeUnauthorized},
		{"a member", agent.ID, projection.ConfigRequest{LeaseTTLMs: 1000}, 403, errs.CodeForbidden},
		{"no lease_ttl_ms", admin.ID, []byte(`{}`), 422, errs.CodeInvalid},
		{"zero", admin.ID, projection.ConfigRequest{}, 422, errs.CodeInvalid},
		{"a string", admin.ID, []byte(`{"lease_ttl_ms":"30s"}`), 422, errs.CodeInvalid},
		{"an unknown field", admin.ID, []byte(`{"lease_ttl_ms":1000,"default":true}`), 422, errs.CodeInvalid},
	} {
		pc.unchanged(tc.name, func() {
			pc.call(0, tc.who, put, "/v1/projection/config", tc.body).want(t, "config: "+tc.name, tc.status, tc.code, nil)
		})
	}

	// Targets.
	var tr projection.TargetResult
	treq := projection.TargetRequest{Attested: attested("http"), Channels: bothChannels}
	pc.call(1, agent.ID, post, "/v1/projection/targets", treq).want(t, "register", 201, "", &tr)
	if got := keys(t, pc.call(1, agent.ID, post, "/v1/projection/targets", treq).body); !slices.Equal(got, []string{"created", "target_id"}) {
		t.Fatalf("register answer keys %v", got)
	}
	pc.call(2, agent.ID, post, "/v1/projection/targets", treq).want(t, "register again", 200, "", nil)
	id := tr.TargetID
	for _, tc := range []struct {
		name   string
		who    string
		body   []byte
		status int
		code   errs.Code
	}{
		{"a session id", agent.ID, []byte(`{"attested":{"schema_version":"1","capability":"c","harness_type":"h","instance_key_digest":"` + digest("i") + `","workspace_key_digest":"` + digest("w") + `","projection_kind":"k"},"channels":[{"channel":"computed-route.v1","producer":"p"}],"session_id":"s-1"}`), 422, errs.CodeInvalid},
		{"a path", agent.ID, []byte(`{"attested":{"schema_version":"1","capability":"c","harness_type":"h","instance_key_digest":"` + digest("i") + `","workspace_key_digest":"` + digest("w") + `","projection_kind":"k"},"channels":[{"channel":"computed-route.v1","producer":"p"}],"path":"/tmp/x"}`), 422, errs.CodeInvalid},
		{"a workspace path for its digest", agent.ID, []byte(`{"attested":{"schema_version":"1","capability":"c","harness_type":"h","instance_key_digest":"` + digest("i") + `","workspace_key_digest":"/home/me/repo","projection_kind":"k"},"channels":[{"channel":"computed-route.v1","producer":"p"}]}`), 422, errs.CodeInvalid},
		{"a reader", reader.ID, []byte(`{"attested":{"schema_version":"1","capability":"c","harness_type":"h","instance_key_digest":"` + digest("i") + `","workspace_key_digest":"` + digest("w") + `","projection_kind":"k"},"channels":[{"channel":"computed-route.v1","producer":"p"}]}`), 403, errs.CodeForbidden},
	} {
		pc.unchanged(tc.name, func() {
			pc.call(0, tc.who, post, "/v1/projection/targets", tc.body).want(t, "register: "+tc.name, tc.status, tc.code, nil)
		})
	}

	// Acquire before lease_ttl_ms is configured: loud, 503, nothing written.
	acq := projection.AcquireRequest{TargetID: id, HolderInstanceDigest: digest("holder-1")}
	pc.unchanged("acquire before configuration", func() {
		r := pc.call(2, agent.ID, post, "/v1/projection/leases/acquire", acq)
		r.want(t, "acquire unconfigured", 503, errs.CodeUnavailable, nil)
		if !strings.Contains(r.err.Message, "projection lease_ttl_ms is not configured") || r.header.Get("Retry-After") == "" {
			t.Fatalf("acquire unconfigured: %s (Retry-After %q)", r, r.header.Get("Retry-After"))
		}
	})
	pc.call(0, admin.ID, put, "/v1/projection/config", projection.ConfigRequest{LeaseTTLMs: 60_000}).want(t, "config", 200, "", &cfg)
	if !cfg.Configured || cfg.LeaseTTLMs != 60_000 || !cfg.Changed {
		t.Fatalf("config: %+v", cfg)
	}

	// Submissions.
	route := projection.ChannelComputedRoute
	expires := time.Now().Add(time.Hour).UnixMilli()
	sub := func(w uint64, body string) projection.SubmitRequest {
		return projection.SubmitRequest{TargetID: id, Channel: route, SourceWatermark: w, Envelope: envelope(route, w, expires, body)}
	}
	var sr projection.SubmitResult
	pc.call(1, router.ID, post, "/v1/projection/channels/submit", sub(5, "five")).want(t, "submit", 200, "", &sr)
	if got := keys(t, pc.call(2, router.ID, post, "/v1/projection/channels/submit", sub(5, "five")).body); sr.Status != projection.SubmitAccepted || !slices.Equal(got, []string{"channel", "source_watermark", "status", "target_id"}) {
		t.Fatalf("submit: %+v, keys %v", sr, got)
	}
	pc.call(0, router.ID, post, "/v1/projection/channels/submit", sub(5, "five")).want(t, "replay", 200, "", &sr)
	if sr.Status != projection.SubmitReplayed {
		t.Fatalf("replay: %+v", sr)
	}
	unknown, _ := projection.DeriveTargetID(agent.ID, attested("unknown"))
	big := sub(6, strings.Repeat("x", projection.MaxEnvelopeBytes))
	for _, tc := range []struct {
		name   string
		who    string
		req    projection.SubmitRequest
		status int
		code   errs.Code
	}{
		{"a regressed watermark", router.ID, sub(4, "four"), 409, projection.CodeStaleWatermark},
		{"the other producer", frontier.ID, sub(6, "six"), 403, errs.CodeForbidden},
		{"the agent", agent.ID, sub(6, "six"), 403, errs.CodeForbidden},
		{"an unknown target", router.ID, projection.SubmitRequest{TargetID: unknown, Channel: route, SourceWatermark: 6, Envelope: sub(6, "x").Envelope}, 404, errs.CodeNotFound},
		{"a hostile target id", router.ID, projection.SubmitRequest{TargetID: "../../../tmp/x", Channel: route, SourceWatermark: 6, Envelope: sub(6, "x").Envelope}, 422, errs.CodeInvalid},
		{"an envelope over 256 KiB", router.ID, big, 413, errs.CodeTooLarge},
	} {
		pc.unchanged(tc.name, func() {
			pc.call(2, tc.who, post, "/v1/projection/channels/submit", tc.req).want(t, "submit: "+tc.name, tc.status, tc.code, nil)
		})
	}
	// A source conflict: 409 conflict with the result; the channel degrades.
	r := pc.call(1, router.ID, post, "/v1/projection/channels/submit", sub(5, "not five"))
	r.want(t, "conflict", 409, errs.CodeConflict, nil)
	if r.err.Detail["decision"] != "conflict" || r.err.Detail["result"] == nil {
		t.Fatalf("conflict detail: %s", r)
	}

	// Acquire, held, publish, release.
	var lease projection.Lease
	pc.call(2, agent.ID, post, "/v1/projection/leases/acquire", acq).want(t, "acquire", 200, "", &lease)
	if got := keys(t, mustJSON(t, lease)); !slices.Equal(got, []string{"expires_at_ms", "fencing_epoch", "target_id", "token"}) || len(lease.Token) != 64 {
		t.Fatalf("acquire answer %+v", lease)
	}
	pc.unchanged("acquire of a held target", func() {
		r := pc.call(0, agent.ID, post, "/v1/projection/leases/acquire", projection.AcquireRequest{TargetID: id, HolderInstanceDigest: digest("holder-2")})
		r.want(t, "held", 409, errs.CodeConflict, nil)
		d := r.err.Detail
		if num(d["fencing_epoch"]) != int64(lease.FencingEpoch) || num(d["expires_at_ms"]) != lease.ExpiresAtMs || num(d["retry_after_ms"]) <= 0 || num(d["retry_after_ms"]) > 60_000 {
			t.Fatalf("held detail: %s", r)
		}
	})
	stale := projection.FenceRequest{TargetID: id, Token: strings.Repeat("0", 64), FencingEpoch: lease.FencingEpoch}
	for _, path := range []string{"/v1/projection/publish", "/v1/projection/leases/release"} {
		pc.unchanged("a wrong token at "+path, func() {
			pc.call(1, agent.ID, post, path, stale).want(t, path+" with a wrong token", 409, errs.CodeStaleFence, nil)
		})
	}
	pc.call(0, agent.ID, post, "/v1/projection/leases/renew", fenceOf(&lease)).want(t, "renew", 404, errs.CodeNotFound, nil)
	var pub projection.PublishResult
	pc.call(1, agent.ID, post, "/v1/projection/publish", fenceOf(&lease)).want(t, "publish", 200, "", &pub)
	if pub.FencingEpoch != lease.FencingEpoch || pub.PublicationSeq <= lease.FencingEpoch || pub.Bytes == 0 || len(pub.SHA256) != 64 {
		t.Fatalf("publish answer %+v", pub)
	}
	var rel projection.ReleaseResult
	pc.call(2, agent.ID, post, "/v1/projection/leases/release", fenceOf(&lease)).want(t, "release after publish", 200, "", &rel)
	if rel.Released || rel.State != projection.LeasePublished {
		t.Fatalf("release after publish: %+v", rel)
	}

	// The file: the same bytes on every node, what GET .../current answers.
	cur := pc.call(2, router.ID, get, "/v1/projection/targets/"+id+"/current", nil)
	cur.want(t, "current", 200, "", nil)
	body := bytes.TrimSpace(cur.body)
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != pub.SHA256 || len(body) != pub.Bytes {
		t.Fatalf("GET current is not the publication: %s", body)
	}
	pc.waitFiles(id, body)
	p, err := projection.ParsePublication(body)
	if err != nil || p.Channels[0].Status != projection.StatusDegraded || p.Channels[1].Status != projection.StatusEmpty {
		t.Fatalf("publication %s (%v)", body, err)
	}

	// Reads: no token, no hash; strangers see nothing.
	v := pc.call(0, frontier.ID, get, "/v1/projection/targets/"+id, nil)
	v.want(t, "view", 200, "", nil)
	raw, _ := hex.DecodeString(lease.Token)
	hash := sha256.Sum256(raw)
	for _, secret := range []string{lease.Token, hex.EncodeToString(hash[:]), "token"} {
		if bytes.Contains(v.body, []byte(secret)) {
			t.Fatalf("the view shows %q: %s", secret, v.body)
		}
	}
	for _, tc := range []struct {
		who, path string
		status    int
		code      errs.Code
	}{
		{stranger.ID, "/v1/projection/targets/" + id, 404, errs.CodeNotFound},
		{stranger.ID, "/v1/projection/targets/" + id + "/current", 404, errs.CodeNotFound},
		{agent.ID, "/v1/projection/targets/" + unknown, 404, errs.CodeNotFound},
		{agent.ID, "/v1/projection/targets/pt_..%2F..%2Fetc", 422, errs.CodeInvalid},
		{agent.ID, "/v1/projection/targets/" + id + "?target_id=" + unknown, 422, errs.CodeInvalid},
		{agent.ID, "/v1/projection/targets/" + id + "?consistency=eventual", 422, errs.CodeInvalid},
		{"", "/v1/projection/targets/" + id, 401, errs.CodeUnauthorized},
	} {
		pc.call(1, tc.who, get, tc.path, nil).want(t, "GET "+tc.path+" as "+tc.who, tc.status, tc.code, nil)
	}
	var other projection.TargetResult
	pc.call(1, agent.ID, post, "/v1/projection/targets", projection.TargetRequest{Attested: attested("empty"), Channels: bothChannels}).want(t, "register", 201, "", &other)
	pc.call(1, agent.ID, get, "/v1/projection/targets/"+other.TargetID+"/current", nil).want(t, "current before any publication", 404, errs.CodeNotFound, nil)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
