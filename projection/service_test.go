package projection_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/projection"
)

func TestSetConfig(t *testing.T) {
	e := newEnv(t)
	cfg, err := e.s.Config(as(reader), 0)
	if err != nil || cfg.Configured || cfg.LeaseTTLMs != 0 {
		t.Fatalf("a fresh cluster's config = %+v, %v; want nothing configured", cfg, err)
	}
	for _, tc := range []struct {
		name string
		who  identity.Principal
		ttl  int64
		code errs.Code
	}{
		{"zero", admin, 0, errs.CodeInvalid},
		{"negative", admin, -5, errs.CodeInvalid},
		{"over an hour", admin, time.Hour.Milliseconds() + 1, errs.CodeInvalid},
		{"a member", agent, 1000, errs.CodeForbidden},
		{"a controller", stranger, 1000, errs.CodeForbidden},
	} {
		e.unchanged(tc.name, func() {
			_, err := e.s.SetConfig(as(tc.who), projection.ConfigRequest{LeaseTTLMs: tc.ttl})
			wantCode(t, tc.name, err, tc.code)
		})
	}
	res, err := e.s.SetConfig(as(admin), projection.ConfigRequest{LeaseTTLMs: 1500})
	if err != nil || !res.Changed || !res.Configured || res.LeaseTTLMs != 1500 {
		t.Fatalf("set = %+v, %v", res, err)
	}
	e.unchanged("setting the same value", func() {
		res, err := e.s.SetConfig(as(admin), projection.ConfigRequest{LeaseTTLMs: 1500})
		if err != nil || res.Changed {
			t.Fatalf("set again = %+v, %v; want unchanged", res, err)
		}
	})
	if cfg, _ := e.s.Config(as(reader), 0); cfg.LeaseTTLMs != 1500 || !cfg.Configured {
		t.Fatalf("config = %+v", cfg)
	}
}

// Until lease_ttl_ms is configured, acquire fails loudly, whoever asks,
// and nothing is written.
func TestAcquireWithoutLeaseTTLFailsLoudly(t *testing.T) {
	e := newEnv(t)
	id := e.target("unconfigured")
	for _, p := range []identity.Principal{agent, admin, {}} {
		e.unchanged("acquire before configuration", func() {
			_, err := e.s.Acquire(as(p), projection.AcquireRequest{TargetID: id, HolderInstanceDigest: digest("h")})
			wantCode(t, "acquire as "+p.ID, err, errs.CodeUnavailable)
			if !strings.Contains(err.Error(), "projection lease_ttl_ms is not configured") {
				t.Fatalf("acquire error %q does not say lease_ttl_ms is not configured", err)
			}
		})
	}
	e.setTTL(1000)
	e.acquire(id)
}

func TestRegisterTarget(t *testing.T) {
	e := newEnv(t)
	res, err := e.s.RegisterTarget(as(agent), projection.TargetRequest{Attested: attested("k"), Channels: bothChannels})
	if err != nil || !res.Created {
		t.Fatalf("register = %+v, %v", res, err)
	}
	want, _ := projection.DeriveTargetID(agent.ID, attested("k"))
	if res.TargetID != want || projection.CheckTargetID(res.TargetID) != nil {
		t.Fatalf("target id %q, want the derived %q", res.TargetID, want)
	}
	// The same tuple, bindings in another order: the same target.
	swapped := []projection.ChannelBinding{bothChannels[1], bothChannels[0]}
	e.unchanged("registering again", func() {
		again, err := e.s.RegisterTarget(as(agent), projection.TargetRequest{Attested: attested("k"), Channels: swapped})
		if err != nil || again.Created || again.TargetID != res.TargetID {
			t.Fatalf("register again = %+v, %v", again, err)
		}
	})
	// Another agent, same tuple: another target.
	other, err := e.s.RegisterTarget(as(agent2), projection.TargetRequest{Attested: attested("k"), Channels: bothChannels})
	if err != nil || other.TargetID == res.TargetID {
		t.Fatalf("another agent's target = %+v, %v", other, err)
	}
	// A trusted host names the agent; the id is the agent's own.
	hosted, err := e.s.RegisterTarget(as(identity.Principal{}), projection.TargetRequest{AgentID: agent.ID, Attested: attested("k"), Channels: bothChannels})
	if err != nil || hosted.TargetID != res.TargetID {
		t.Fatalf("the host's registration for agent-7 = %+v, %v; want %s", hosted, err, res.TargetID)
	}

	bad := func(edit func(*projection.TargetRequest)) projection.TargetRequest {
		r := projection.TargetRequest{Attested: attested("k2"), Channels: []projection.ChannelBinding{{Channel: projection.ChannelComputedRoute, Producer: router.ID}}}
		edit(&r)
		return r
	}
	for _, tc := range []struct {
		name string
		who  identity.Principal
		req  projection.TargetRequest
		code errs.Code
	}{
		{"other bindings", agent, projection.TargetRequest{Attested: attested("k"), Channels: bothChannels[:1]}, errs.CodeConflict},
		{"a reader", reader, bad(func(*projection.TargetRequest) {}), errs.CodeForbidden},
		{"another agent's id", agent, bad(func(r *projection.TargetRequest) { r.AgentID = agent2.ID }), errs.CodeForbidden},
		{"a host without agent_id", identity.Principal{}, bad(func(*projection.TargetRequest) {}), errs.CodeInvalid},
		{"a path as capability", agent, bad(func(r *projection.TargetRequest) { r.Attested.Capability = "/etc/passwd" }), errs.CodeInvalid},
		{"a relative path as kind", agent, bad(func(r *projection.TargetRequest) { r.Attested.ProjectionKind = "../../x" }), errs.CodeInvalid},
		{"dot dot", agent, bad(func(r *projection.TargetRequest) { r.Attested.HarnessType = "a..b" }), errs.CodeInvalid},
		{"a backslash", agent, bad(func(r *projection.TargetRequest) { r.Attested.HarnessType = `a\b` }), errs.CodeInvalid},
		{"a raw workspace path", agent, bad(func(r *projection.TargetRequest) { r.Attested.WorkspaceKeyDigest = "/home/me/repo" }), errs.CodeInvalid},
		{"an uppercase digest", agent, bad(func(r *projection.TargetRequest) { r.Attested.InstanceKeyDigest = strings.ToUpper(digest("i")) }), errs.CodeInvalid},
		{"an empty schema version", agent, bad(func(r *projection.TargetRequest) { r.Attested.SchemaVersion = "" }), errs.CodeInvalid},
		{"a long capability", agent, bad(func(r *projection.TargetRequest) { r.Attested.Capability = strings.Repeat("c", 257) }), errs.CodeInvalid},
		{"no channels", agent, bad(func(r *projection.TargetRequest) { r.Channels = nil }), errs.CodeInvalid},
		{"an unknown channel", agent, bad(func(r *projection.TargetRequest) { r.Channels[0].Channel = "gossip.v1" }), errs.CodeInvalid},
		{"a channel twice", agent, bad(func(r *projection.TargetRequest) { r.Channels = append(r.Channels, r.Channels[0]) }), errs.CodeInvalid},
		{"no producer", agent, bad(func(r *projection.TargetRequest) { r.Channels[0].Producer = "" }), errs.CodeInvalid},
	} {
		e.unchanged(tc.name, func() {
			_, err := e.s.RegisterTarget(as(tc.who), tc.req)
			wantCode(t, tc.name, err, tc.code)
		})
	}
}

func TestTargetsPerAgentAreBounded(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < projection.MaxTargetsPerAgent; i++ {
		e.target(strings.Repeat("k", i+1))
	}
	e.unchanged("one target too many", func() {
		_, err := e.s.RegisterTarget(as(agent), projection.TargetRequest{Attested: attested("one-more"), Channels: bothChannels})
		wantCode(t, "target 65", err, errs.CodeExhausted)
	})
	if _, err := e.s.RegisterTarget(as(agent2), projection.TargetRequest{Attested: attested("one-more"), Channels: bothChannels}); err != nil {
		t.Fatalf("another agent's first target: %v", err)
	}
}

func TestSubmitWatermarkRules(t *testing.T) {
	e := newEnv(t)
	id := e.target("w")
	route := projection.ChannelComputedRoute
	if res, err := e.submit(router, id, route, 5, "v5"); err != nil || res.Status != projection.SubmitAccepted {
		t.Fatalf("first = %+v, %v", res, err)
	}
	// The same envelope again, even with its keys in another order and
	// other spacing, is a replay that changes nothing.
	e.unchanged("a replay", func() {
		raw := envelope(route, 5, later, "v5")
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		spaced, _ := json.MarshalIndent(m, "", "   ")
		res, err := e.s.Submit(as(router), projection.SubmitRequest{TargetID: id, Channel: route, SourceWatermark: 5, Envelope: spaced})
		if err != nil || res.Status != projection.SubmitReplayed {
			t.Fatalf("replay = %+v, %v", res, err)
		}
	})
	e.unchanged("a regressed watermark", func() {
		_, err := e.submit(router, id, route, 4, "v4")
		wantCode(t, "watermark 4 after 5", err, projection.CodeStaleWatermark)
	})
	// Another envelope at the same watermark: a source conflict, which
	// degrades the channel (a change) and answers conflict.
	res, err := e.submit(router, id, route, 5, "other")
	wantCode(t, "conflict", err, errs.CodeConflict)
	if res == nil || res.Status != "conflict" {
		t.Fatalf("a conflict returns its result: %+v", res)
	}
	view := e.view(id)
	if ch := view.Channels[0]; ch.Channel != route || ch.Status != projection.StatusDegraded || ch.Conflicts != 1 || ch.SourceWatermark != 5 {
		t.Fatalf("after a conflict: %+v", ch)
	}
	// The original is still a replay; the channel stays degraded.
	if res, err := e.submit(router, id, route, 5, "v5"); err != nil || res.Status != projection.SubmitReplayed {
		t.Fatalf("replay while degraded = %+v, %v", res, err)
	}
	if ch := e.view(id).Channels[0]; ch.Status != projection.StatusDegraded {
		t.Fatalf("a replay ended the degradation: %+v", ch)
	}
	// A higher watermark ends it.
	if res, err := e.submit(router, id, route, 6, "v6"); err != nil || res.Status != projection.SubmitAccepted {
		t.Fatalf("watermark 6 = %+v, %v", res, err)
	}
	if ch := e.view(id).Channels[0]; ch.Status != projection.StatusFresh || ch.SourceWatermark != 6 || ch.Conflicts != 0 {
		t.Fatalf("after a higher watermark: %+v", ch)
	}
	// Watermark 0 is a watermark like any other on an empty channel.
	if _, err := e.submit(frontier, id, projection.ChannelLifecycleFrontier, 0, "zero"); err != nil {
		t.Fatalf("watermark 0: %v", err)
	}
}

func (e *env) view(id string) *projection.TargetView {
	e.t.Helper()
	v, err := e.s.Target(as(agent), id, 0)
	if err != nil {
		e.t.Fatalf("read target: %v", err)
	}
	return v
}

// Only the channel's producer submits; a channel the target does not
// admit has no producer; an unknown target is not found.
func TestSubmitIdentityAndAdmission(t *testing.T) {
	e := newEnv(t)
	id := e.target("ident")
	onlyRoute, err := e.s.RegisterTarget(as(agent), projection.TargetRequest{Attested: attested("route-only"),
		Channels: []projection.ChannelBinding{{Channel: projection.ChannelComputedRoute, Producer: router.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	unknown, _ := projection.DeriveTargetID(agent.ID, attested("never-registered"))
	route, front := projection.ChannelComputedRoute, projection.ChannelLifecycleFrontier
	for _, tc := range []struct {
		name    string
		who     identity.Principal
		target  string
		channel string
		code    errs.Code
	}{
		{"the other channel's producer", frontier, id, route, errs.CodeForbidden},
		{"the agent", agent, id, route, errs.CodeForbidden},
		{"an admin", admin, id, route, errs.CodeForbidden},
		{"a stranger", stranger, id, front, errs.CodeForbidden},
		{"an unadmitted channel", frontier, onlyRoute.TargetID, front, errs.CodeForbidden},
		{"an unadmitted channel, by a producer of the target", router, onlyRoute.TargetID, front, errs.CodeForbidden},
		{"an unknown target", router, unknown, route, errs.CodeNotFound},
		{"a malformed target id", router, "pt_../../etc", route, errs.CodeInvalid},
		{"an unknown channel", router, id, "gossip.v1", errs.CodeInvalid},
	} {
		e.unchanged(tc.name, func() {
			_, err := e.submit(tc.who, tc.target, tc.channel, 1, "x")
			wantCode(t, tc.name, err, tc.code)
		})
	}
	// The producer, with a reader's role only, may not write either.
	demoted := identity.Principal{ID: router.ID, Tenants: router.Tenants, Roles: []string{identity.RoleReader}}
	e.unchanged("a demoted producer", func() {
		_, err := e.submit(demoted, id, route, 1, "x")
		wantCode(t, "demoted producer", err, errs.CodeForbidden)
	})
	// A trusted host submits for anyone.
	if _, err := e.submit(identity.Principal{}, id, route, 1, "x"); err != nil {
		t.Fatalf("host submit: %v", err)
	}
}

// The frame is checked, not the content; each broken frame is invalid
// and changes nothing.
func TestSubmitFrame(t *testing.T) {
	e := newEnv(t)
	id := e.target("frame")
	route := projection.ChannelComputedRoute
	base := func() map[string]any {
		var m map[string]any
		_ = json.Unmarshal(envelope(route, 7, later, map[string]any{"anything": []any{1, "two", nil}}), &m)
		return m
	}
	with := func(edit func(map[string]any)) json.RawMessage {
		m := base()
		edit(m)
		b, _ := json.Marshal(m)
		return b
	}
	for _, tc := range []struct {
		name string
		env  json.RawMessage
		code errs.Code
	}{
		{"not an object", json.RawMessage(`[1,2]`), errs.CodeInvalid},
		{"not JSON", json.RawMessage(`{"schema":`), errs.CodeInvalid},
		{"the other channel's schema", with(func(m map[string]any) { m["schema"] = projection.ChannelLifecycleFrontier }), errs.CodeInvalid},
		{"not_authority false", with(func(m map[string]any) { m["not_authority"] = false }), errs.CodeInvalid},
		{"not_authority missing", with(func(m map[string]any) { delete(m, "not_authority") }), errs.CodeInvalid},
		{"another watermark", with(func(m map[string]any) { m["watermark"] = 8 }), errs.CodeInvalid},
		{"a fractional watermark", with(func(m map[string]any) { m["watermark"] = 7.5 }), errs.CodeInvalid},
		{"a string expiry", with(func(m map[string]any) { m["expires_at_ms"] = "soon" }), errs.CodeInvalid},
		{"no expiry", with(func(m map[string]any) { delete(m, "expires_at_ms") }), errs.CodeInvalid},
		{"provenance not an object", with(func(m map[string]any) { m["provenance"] = "me" }), errs.CodeInvalid},
		{"citations not an array", with(func(m map[string]any) { m["citations"] = map[string]any{} }), errs.CodeInvalid},
		{"a null body", with(func(m map[string]any) { m["body"] = nil }), errs.CodeInvalid},
		{"no body", with(func(m map[string]any) { delete(m, "body") }), errs.CodeInvalid},
		{"an extra field", with(func(m map[string]any) { m["path"] = "/tmp/x" }), errs.CodeInvalid},
		{"a session id", with(func(m map[string]any) { m["session_id"] = "s-1" }), errs.CodeInvalid},
		{"over 256 KiB", with(func(m map[string]any) { m["body"] = strings.Repeat("x", projection.MaxEnvelopeBytes) }), errs.CodeTooLarge},
		{"expired on arrival", envelope(route, 7, fsmtest.Epoch-1, "late"), errs.CodeExpired},
	} {
		e.unchanged(tc.name, func() {
			_, err := e.s.Submit(as(router), projection.SubmitRequest{TargetID: id, Channel: route, SourceWatermark: 7, Envelope: tc.env})
			wantCode(t, tc.name, err, tc.code)
		})
	}
	if _, err := e.s.Submit(as(router), projection.SubmitRequest{TargetID: id, Channel: route, SourceWatermark: 7, Envelope: with(func(map[string]any) {})}); err != nil {
		t.Fatalf("a valid frame with any body: %v", err)
	}
}

func TestAcquire(t *testing.T) {
	e := newEnv(t)
	e.setTTL(10_000)
	id := e.target("acq")
	first := e.acquire(id)
	if first.FencingEpoch == 0 || len(first.Token) != 64 || first.ExpiresAtMs != fsmtest.Epoch+10_000 {
		t.Fatalf("lease = %+v", first)
	}
	// Held: a conflict that says until when, by anyone, the holder's
	// process included (there is no renewal); nothing written.
	e.l.Advance(4 * time.Second)
	for _, p := range []identity.Principal{agent, admin} {
		e.unchanged("acquire of a held target", func() {
			_, err := e.s.Acquire(as(p), projection.AcquireRequest{TargetID: id, HolderInstanceDigest: digest("other")})
			wantCode(t, "held", err, errs.CodeConflict)
			d := errs.From(err).Detail
			if num(d["fencing_epoch"]) != int64(first.FencingEpoch) || num(d["expires_at_ms"]) != first.ExpiresAtMs || num(d["retry_after_ms"]) != 6000 {
				t.Fatalf("held detail = %v; want epoch %d, expiry %d, retry after 6000", d, first.FencingEpoch, first.ExpiresAtMs)
			}
		})
	}
	for _, tc := range []struct {
		name string
		who  identity.Principal
		req  projection.AcquireRequest
		code errs.Code
	}{
		{"a producer", router, projection.AcquireRequest{TargetID: id, HolderInstanceDigest: digest("h")}, errs.CodeForbidden},
		{"a stranger", stranger, projection.AcquireRequest{TargetID: id, HolderInstanceDigest: digest("h")}, errs.CodeForbidden},
		{"the agent as reader", identity.Principal{ID: agent.ID, Roles: []string{identity.RoleReader}}, projection.AcquireRequest{TargetID: id, HolderInstanceDigest: digest("h")}, errs.CodeForbidden},
		{"a raw instance key", agent, projection.AcquireRequest{TargetID: id, HolderInstanceDigest: "my-laptop"}, errs.CodeInvalid},
		{"a path as target", agent, projection.AcquireRequest{TargetID: "../" + id, HolderInstanceDigest: digest("h")}, errs.CodeInvalid},
	} {
		e.unchanged(tc.name, func() {
			_, err := e.s.Acquire(as(tc.who), tc.req)
			wantCode(t, tc.name, err, tc.code)
		})
	}
	// Expired (FSM time reaches the expiry): the next grant takes over
	// with a higher epoch.
	e.l.Advance(6 * time.Second)
	second := e.acquire(id)
	if second.FencingEpoch <= first.FencingEpoch || second.Token == first.Token {
		t.Fatalf("takeover lease %+v after %+v", second, first)
	}
	if v := e.view(id); v.Lease == nil || v.Lease.FencingEpoch != second.FencingEpoch || v.Lease.State != projection.LeaseHeld {
		t.Fatalf("view after takeover: %+v", v.Lease)
	}
}

// num reads an integer from an error detail, whatever integer type the
// wire gave it.
func num(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case json.Number:
		n, _ := x.Int64()
		return n
	case float64:
		return int64(x)
	}
	return -1
}

func TestPublishFencing(t *testing.T) {
	e := newEnv(t)
	e.setTTL(10_000)
	id := e.target("pub")
	if _, err := e.submit(router, id, projection.ChannelComputedRoute, 1, "r1"); err != nil {
		t.Fatal(err)
	}
	stale := e.acquire(id)
	e.l.Advance(10 * time.Second) // expires_at reached: expired
	e.unchanged("a publish after expiry", func() {
		_, err := e.s.Publish(as(agent), fenceOf(stale))
		wantCode(t, "publish after expiry", err, errs.CodeExpired)
	})
	succ := e.acquire(id)
	wrongToken := fenceOf(succ)
	wrongToken.Token = stale.Token
	wrongEpoch := fenceOf(succ)
	wrongEpoch.FencingEpoch = stale.FencingEpoch
	future := fenceOf(succ)
	future.FencingEpoch++
	for _, tc := range []struct {
		name string
		who  identity.Principal
		req  projection.FenceRequest
		code errs.Code
	}{
		{"the stale holder", agent, fenceOf(stale), errs.CodeStaleFence},
		{"the successor's epoch with the stale token", agent, wrongToken, errs.CodeStaleFence},
		{"the successor's token with the stale epoch", agent, wrongEpoch, errs.CodeStaleFence},
		{"an epoch not granted yet", agent, future, errs.CodeStaleFence},
		{"a stranger with the token", stranger, fenceOf(succ), errs.CodeForbidden},
		{"a producer with the token", router, fenceOf(succ), errs.CodeForbidden},
		{"a token not in hex", agent, projection.FenceRequest{TargetID: id, Token: strings.Repeat("z", 64), FencingEpoch: succ.FencingEpoch}, errs.CodeInvalid},
		{"epoch 0", agent, projection.FenceRequest{TargetID: id, Token: succ.Token}, errs.CodeInvalid},
	} {
		e.unchanged(tc.name, func() {
			_, err := e.s.Publish(as(tc.who), tc.req)
			wantCode(t, tc.name, err, tc.code)
		})
		if tc.code == errs.CodeStaleFence {
			e.unchanged(tc.name+" (release)", func() {
				_, err := e.s.Release(as(tc.who), tc.req)
				wantCode(t, tc.name+" release", err, tc.code)
			})
		}
	}
	if _, err := readCurrent(e, id); err == nil {
		t.Fatal("refused publishes wrote current.json")
	}
	res, err := e.s.Publish(as(agent), fenceOf(succ))
	if err != nil || res.FencingEpoch != succ.FencingEpoch || res.PublicationSeq <= succ.FencingEpoch || res.Replayed {
		t.Fatalf("publish = %+v, %v", res, err)
	}
	// A retry of the same publish answers it again (replayed) and
	// changes nothing; the consumed lease cannot publish anew.
	e.unchanged("a publish retry", func() {
		again, err := e.s.Publish(as(agent), fenceOf(succ))
		if err != nil || !again.Replayed || again.PublicationSeq != res.PublicationSeq || again.SHA256 != res.SHA256 {
			t.Fatalf("retry = %+v, %v", again, err)
		}
	})
	// The lease is consumed: release is a no-op success (holders call it
	// on every path), and the target is free at once.
	e.unchanged("a release after publish", func() {
		rel, err := e.s.Release(as(agent), fenceOf(succ))
		if err != nil || rel.Released || rel.State != projection.LeasePublished {
			t.Fatalf("release after publish = %+v, %v", rel, err)
		}
	})
	next := e.acquire(id)
	if next.FencingEpoch <= res.PublicationSeq {
		t.Fatalf("epoch %d after publication %d", next.FencingEpoch, res.PublicationSeq)
	}
	// The consumed lease's publish after the next grant: stale_fence.
	e.unchanged("the consumed lease after a new grant", func() {
		_, err := e.s.Publish(as(agent), fenceOf(succ))
		wantCode(t, "consumed lease", err, errs.CodeStaleFence)
	})
	b, err := readCurrent(e, id)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := projection.ParsePublication(b)
	if err != nil || pub.PublicationSeq != res.PublicationSeq || pub.FencingEpoch != succ.FencingEpoch {
		t.Fatalf("current.json = %s (%v)", b, err)
	}
}

func TestRelease(t *testing.T) {
	e := newEnv(t)
	e.setTTL(10_000)
	id := e.target("rel")
	l := e.acquire(id)
	rel, err := e.s.Release(as(agent), fenceOf(l))
	if err != nil || !rel.Released || rel.State != projection.LeaseReleased {
		t.Fatalf("release = %+v, %v", rel, err)
	}
	e.unchanged("a second release", func() {
		again, err := e.s.Release(as(agent), fenceOf(l))
		if err != nil || again.Released || again.State != projection.LeaseReleased {
			t.Fatalf("release again = %+v, %v", again, err)
		}
	})
	e.unchanged("a publish after release", func() {
		_, err := e.s.Publish(as(agent), fenceOf(l))
		wantCode(t, "publish after release", err, errs.CodeStaleFence)
	})
	// Released: the next acquire is granted at once.
	succ := e.acquire(id)
	// The first holder can neither release nor publish over its
	// successor.
	e.unchanged("a stale release", func() {
		_, err := e.s.Release(as(agent), fenceOf(l))
		wantCode(t, "stale release", err, errs.CodeStaleFence)
	})
	// An expired lease is released without change.
	e.l.Advance(10 * time.Second)
	e.unchanged("releasing an expired lease", func() {
		rel, err := e.s.Release(as(agent), fenceOf(succ))
		if err != nil || rel.Released || rel.State != projection.LeaseExpired {
			t.Fatalf("release of an expired lease = %+v, %v", rel, err)
		}
	})
}

// There is no renewal: no route, no command; a holder that acquires
// again while it holds is refused.
func TestNoRenewal(t *testing.T) {
	e := newEnv(t)
	e.setTTL(5_000)
	id := e.target("renew")
	l := e.acquire(id)
	e.l.Advance(4 * time.Second)
	_, err := e.s.Acquire(as(agent), projection.AcquireRequest{TargetID: id, HolderInstanceDigest: digest("holder")})
	wantCode(t, "acquire while holding", err, errs.CodeConflict)
	e.l.Advance(time.Second)
	_, err = e.s.Publish(as(agent), fenceOf(l))
	wantCode(t, "publish at the expiry instant", err, errs.CodeExpired)
	for _, c := range projection.Module().Commands {
		if strings.Contains(c.Name, "renew") || strings.Contains(c.Name, "extend") {
			t.Errorf("command %s renews leases", c.Name)
		}
	}
}

// Composition: one entry per admitted channel in channel-name order,
// with its status, and the envelope only when fresh.
func TestComposition(t *testing.T) {
	e := newEnv(t)
	e.setTTL(60_000)
	id := e.target("compose")
	route, front := projection.ChannelComputedRoute, projection.ChannelLifecycleFrontier
	publish := func() *projection.Publication {
		t.Helper()
		l := e.acquire(id)
		if _, err := e.s.Publish(as(agent), fenceOf(l)); err != nil {
			t.Fatalf("publish: %v", err)
		}
		b, err := readCurrent(e, id)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := e.s.Current(as(router), id, 0)
		if err != nil || string(stored) != string(b) {
			t.Fatalf("GET current differs from the file:\n%s\n%s (%v)", stored, b, err)
		}
		p, err := projection.ParsePublication(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return p
	}
	statuses := func(p *projection.Publication) []string {
		var out []string
		for _, c := range p.Channels {
			out = append(out, c.Channel+"="+c.Status)
		}
		return out
	}
	p := publish()
	if got := strings.Join(statuses(p), " "); got != route+"=empty "+front+"=empty" {
		t.Fatalf("nothing submitted: %s", got)
	}
	if _, err := e.submit(frontier, id, front, 3, "f3"); err != nil {
		t.Fatal(err)
	}
	short := envelope(route, 2, fsmtest.Epoch+1000, "r2")
	if _, err := e.s.Submit(as(router), projection.SubmitRequest{TargetID: id, Channel: route, SourceWatermark: 2, Envelope: short}); err != nil {
		t.Fatal(err)
	}
	p = publish()
	if got := strings.Join(statuses(p), " "); got != route+"=fresh "+front+"=fresh" {
		t.Fatalf("both fresh: %s", got)
	}
	if p.Channels[0].Envelope == nil || p.Channels[0].SourceWatermark != 2 || string(p.Channels[0].Citations) != `["cite-2"]` || p.Channels[0].Producer != router.ID {
		t.Fatalf("fresh entry: %+v", p.Channels[0])
	}
	e.l.Advance(time.Second) // the route envelope's expiry
	if _, err := e.submit(frontier, id, front, 3, "conflicting"); !errors.Is(err, errs.Conflict) {
		t.Fatalf("conflict: %v", err)
	}
	p = publish()
	if got := strings.Join(statuses(p), " "); got != route+"=expired "+front+"=degraded" {
		t.Fatalf("expired and degraded: %s", got)
	}
	for _, c := range p.Channels {
		if c.Envelope != nil || c.Provenance == nil || c.Citations == nil || c.SourceWatermark == 0 {
			t.Fatalf("%s entry: %+v; want provenance, citations and watermark, no envelope", c.Status, c)
		}
	}
	if p.PublishedAtMs != fsmtest.Epoch+1000 || p.TargetID != id {
		t.Fatalf("publication %+v", p)
	}
}

// TestCurrentIsCanonical: the publication is canonical JSON, the same
// bytes on every node.
func TestCurrentIsCanonical(t *testing.T) {
	e := newEnv(t)
	e.setTTL(60_000)
	id := e.target("canon")
	if _, err := e.submit(router, id, projection.ChannelComputedRoute, 9, map[string]any{"z": 1, "a": []any{"<&>", 1.50, "é"}}); err != nil {
		t.Fatal(err)
	}
	l := e.acquire(id)
	if _, err := e.s.Publish(as(agent), fenceOf(l)); err != nil {
		t.Fatal(err)
	}
	b, err := readCurrent(e, id)
	if err != nil {
		t.Fatal(err)
	}
	if !canonical(b) {
		t.Fatalf("current.json is not canonical JSON: %s", b)
	}
}
