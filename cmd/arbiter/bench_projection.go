package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/loadgen"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/projection"
)

// The projection ops (docs/domains/projection.md): channel-submit hands
// one envelope per call to a channel with a rising watermark; publish
// publishes a target per call under a lease taken in the same call (a
// publication consumes its lease, so every publish needs a new one),
// its latency counted from after the acquire (loadgen.StartClock). Its
// ops/s and CPU per operation are of the whole acquire-and-publish
// cycle. Each client has a target of its own, the same in every run and
// invocation (a cluster holds at most projection.MaxTargets).

// maxProjectionClients bounds the clients of a projection op: each has a
// target, and the two ops' targets must fit in projection.MaxTargets.
const maxProjectionClients = 256

// benchLeaseTTL is the lease_ttl_ms the setup configures on a cluster
// that has none (acquire is refused until one is set).
const benchLeaseTTL = 30 * time.Second

// benchEnvelopeBody is the content each envelope carries: a few hundred
// bytes, as a computed route might.
var benchEnvelopeBody = strings.Repeat("r", 256)

// projectionTargets registers one target per client for kind (publish
// or channel-submit), with the computed-route channel, and returns their
// ids. In open mode the bench names the agents (projection.
// MaxTargetsPerAgent clients to an agent) and the producer; with a
// credential both are the caller's principal.
func projectionTargets(e benchEnv, kind string) ([]string, error) {
	r := e.remotes[0]
	who, err := setupCall(func(ctx context.Context) (*cluster.Whoami, error) {
		var w cluster.Whoami
		return &w, r.CallJSON(ctx, http.MethodGet, "/v1/auth/whoami", nil, &w)
	})
	if err != nil {
		return nil, fmt.Errorf("asking who the bench is: %w", err)
	}
	svc := projection.NewService(r, r)
	cfg, err := setupCall(func(ctx context.Context) (*projection.Config, error) { return svc.Config(ctx, fsm.Linearizable) })
	if err != nil {
		return nil, fmt.Errorf("reading the projection config: %w", err)
	}
	if !cfg.Configured {
		if _, err := setupCall(func(ctx context.Context) (*projection.Config, error) {
			return svc.SetConfig(ctx, projection.ConfigRequest{LeaseTTLMs: benchLeaseTTL.Milliseconds()})
		}); err != nil {
			return nil, fmt.Errorf("setting lease_ttl_ms: %w", err)
		}
	}
	producer := who.Principal
	if who.AuthMode == "open" {
		producer = "arbiter-bench"
	}
	ids := make([]string, len(e.remotes))
	for c := range ids {
		req := projection.TargetRequest{Attested: projection.Attested{SchemaVersion: "1", Capability: "bench", HarnessType: "arbiter-bench",
			InstanceKeyDigest: benchDigest(kind, c), WorkspaceKeyDigest: benchDigest("workspace", 0), ProjectionKind: kind},
			Channels: []projection.ChannelBinding{{Channel: projection.ChannelComputedRoute, Producer: producer}}}
		if who.AuthMode == "open" {
			req.AgentID = fmt.Sprintf("arbiter-bench-%s-%d", kind, c/projection.MaxTargetsPerAgent)
		}
		res, err := setupCall(func(ctx context.Context) (*projection.TargetResult, error) { return svc.RegisterTarget(ctx, req) })
		if err != nil {
			return nil, fmt.Errorf("registering the target of client %d: %w", c, err)
		}
		ids[c] = res.TargetID
	}
	return ids, nil
}

func benchDigest(kind string, n int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "arbiter-bench/%s/%d", kind, n))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// benchEnvelope is an envelope of the computed-route channel at
// watermark w, good for an hour.
func benchEnvelope(w uint64) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"schema":%q,"not_authority":true,"watermark":%d,"expires_at_ms":%d,"provenance":{"source":"arbiter-bench"},"citations":[],"body":%q}`,
		projection.ChannelComputedRoute, w, time.Now().Add(time.Hour).UnixMilli(), benchEnvelopeBody))
}

// submitEnvelope submits env at watermark w to target's computed-route
// channel and checks that the channel took it (replayed too, if
// replayOK: the setup sends a submit again after an unknown outcome).
func submitEnvelope(ctx context.Context, svc *projection.Service, target string, w uint64, env json.RawMessage, replayOK bool) error {
	res, err := svc.Submit(ctx, projection.SubmitRequest{TargetID: target, Channel: projection.ChannelComputedRoute, SourceWatermark: w, Envelope: env})
	if err == nil && res.Status != projection.SubmitAccepted && !(replayOK && res.Status == projection.SubmitReplayed) {
		err = fmt.Errorf("submit at watermark %d answered %q, not accepted", w, res.Status)
	}
	return err
}

// watermarkBase is above every watermark an earlier run submitted to the
// same targets: microseconds of the clock, which runs faster than any
// client submits.
func watermarkBase() uint64 { return uint64(time.Now().UnixMicro()) }

// channelSubmitOp submits one envelope per call, each client to its own
// target's channel, each call's watermark above the last.
func channelSubmitOp(e benchEnv) (loadgen.Op, string, error) {
	targets, err := projectionTargets(e, "channel-submit")
	if err != nil {
		return nil, "", err
	}
	base := watermarkBase()
	services := perClient(e.remotes, func(r *rawremote.Remote) *projection.Service { return projection.NewService(r, r) })
	return func(ctx context.Context, c, seq int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		w := base + uint64(seq) + 1
		return submitEnvelope(ctx, services[c], targets[c], w, benchEnvelope(w), false)
	}, fmt.Sprintf("%d targets", len(targets)), nil
}

// publishOp acquires its target's lease, then publishes under it; the
// latency is the publish's. The setup gives every target's channel an
// envelope, so that each publication carries one.
func publishOp(e benchEnv) (loadgen.Op, string, error) {
	targets, err := projectionTargets(e, "publish")
	if err != nil {
		return nil, "", err
	}
	base := watermarkBase()
	env := benchEnvelope(base)
	if _, err := prepare(e.remotes, setupWorkers, len(targets), func(ctx context.Context, r *rawremote.Remote, j int) ([]struct{}, error) {
		return nil, submitEnvelope(ctx, projection.NewService(r, r), targets[j], base, env, true)
	}); err != nil {
		return nil, "", err
	}
	services := perClient(e.remotes, func(r *rawremote.Remote) *projection.Service { return projection.NewService(r, r) })
	return func(ctx context.Context, c, _ int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		svc := services[c]
		lease, err := svc.Acquire(ctx, projection.AcquireRequest{TargetID: targets[c], HolderInstanceDigest: benchDigest("holder", c)})
		if err != nil {
			return fmt.Errorf("acquire before the publish: %w", err)
		}
		loadgen.StartClock(ctx)
		res, err := svc.Publish(ctx, projection.FenceRequest{TargetID: targets[c], Token: lease.Token, FencingEpoch: lease.FencingEpoch})
		switch {
		case err != nil:
			return err
		case res.Replayed || res.FencingEpoch != lease.FencingEpoch || res.PublicationSeq == 0:
			return fmt.Errorf("publish answered %+v, not a new publication under the lease", res)
		case res.File != projection.FileWritten && res.File != projection.FileNone:
			return fmt.Errorf("publish: the node's file is %s %s", res.File, res.FileError)
		}
		return nil
	}, fmt.Sprintf("%d targets, each with an envelope", len(targets)), nil
}
