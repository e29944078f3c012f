package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

func TestProjection(t *testing.T) {
	ctx, p := ctxOf(t), newClient(t, "ops").Projection()
	cfg, err := p.SetConfig(ctx, client.ConfigRequest{LeaseTTLMs: 30_000})
	must(t, err)
	if !cfg.Configured || cfg.LeaseTTLMs != 30_000 {
		t.Fatalf("set config: %+v", cfg)
	}
	if got, err := p.Config(ctx, client.Linearizable); err != nil || got.LeaseTTLMs != 30_000 {
		t.Fatalf("config: %+v %v", got, err)
	}
	attested := client.Attested{SchemaVersion: "1", Capability: "hook-advisory", HarnessType: "claude-code",
		InstanceKeyDigest: digest("instance"), WorkspaceKeyDigest: digest("workspace"), ProjectionKind: unique(t)}
	channels := []client.ChannelBinding{{Channel: "computed-route.v1", Producer: "ops"}}
	reg, err := p.RegisterTarget(ctx, client.TargetRequest{Attested: attested, Channels: channels})
	must(t, err)
	if !reg.Created || reg.TargetID == "" {
		t.Fatalf("register: %+v", reg)
	}
	again, err := p.RegisterTarget(ctx, client.TargetRequest{Attested: attested, Channels: channels})
	must(t, err)
	if again.Created || again.TargetID != reg.TargetID {
		t.Fatalf("register again: %+v", again)
	}
	target := reg.TargetID
	view, err := p.Target(ctx, target, client.Linearizable)
	must(t, err)
	envelope := func(w uint64) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"schema":"computed-route.v1","not_authority":true,"watermark":%d,"expires_at_ms":%d,"provenance":{"run":%d},"citations":["c"],"body":{"route":"exact"}}`,
			w, view.NowMs+3_600_000, w))
	}
	sub, err := p.Submit(ctx, client.ChannelSubmitRequest{TargetID: target, Channel: "computed-route.v1", SourceWatermark: 2, Envelope: envelope(2)})
	must(t, err)
	if sub.Status != "accepted" {
		t.Fatalf("submit: %+v", sub)
	}
	_, err = p.Submit(ctx, client.ChannelSubmitRequest{TargetID: target, Channel: "computed-route.v1", SourceWatermark: 1, Envelope: envelope(1)})
	wantCode(t, err, client.CodeStaleWatermark)

	var lease client.ProjectionLease
	pub, err := p.Hold(ctx, target, digest("holder"), func(ctx context.Context, l *client.ProjectionLease) error {
		lease = *l
		_, err := p.Acquire(ctx, client.ProjectionAcquireRequest{TargetID: target, HolderInstanceDigest: digest("other")})
		wantCode(t, err, errs.CodeConflict) // single writer
		return nil
	})
	must(t, err)
	if pub.File != "written" || pub.FencingEpoch != lease.FencingEpoch || pub.PublicationSeq == 0 {
		t.Fatalf("hold: %+v", pub)
	}
	cur, err := p.Current(ctx, target, client.Linearizable)
	must(t, err)
	var current struct {
		PublicationSeq uint64 `json:"publication_seq"`
	}
	must(t, json.Unmarshal(cur, &current))
	if current.PublicationSeq != pub.PublicationSeq {
		t.Fatalf("current.json: %s", cur)
	}
	replay, err := p.Publish(ctx, client.FenceRequest{TargetID: target, Token: lease.Token, FencingEpoch: lease.FencingEpoch})
	must(t, err)
	if !replay.Replayed || replay.PublicationSeq != pub.PublicationSeq {
		t.Fatalf("publish again: %+v", replay)
	}
	_, err = p.Publish(ctx, client.FenceRequest{TargetID: target, Token: lease.Token, FencingEpoch: lease.FencingEpoch - 1})
	wantCode(t, err, errs.CodeStaleFence)

	// A holder whose work fails releases the lease: the next acquire
	// succeeds at once.
	boom := fmt.Errorf("boom")
	_, err = p.Hold(ctx, target, digest("holder"), func(context.Context, *client.ProjectionLease) error { return boom })
	if err != boom {
		t.Fatalf("hold with a failing body: %v", err)
	}
	next, err := p.Acquire(ctx, client.ProjectionAcquireRequest{TargetID: target, HolderInstanceDigest: digest("third")})
	must(t, err)
	rel, err := p.Release(ctx, client.FenceRequest{TargetID: target, Token: next.Token, FencingEpoch: next.FencingEpoch})
	must(t, err)
	if !rel.Released {
		t.Fatalf("release: %+v", rel)
	}
}
