package mcptools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
)

// Projection: hook projections published through the fenced
// single-writer lease (projection-writer-lease.txt). The hard case is
// many MCP processes racing one target: only the lease holder's publish
// reaches current.json, and publish_projection releases the lease with
// its token and epoch whatever fails.

// maxPublishChannels bounds the channels one publish_projection submits
// (the API knows two channel names; a target binds each at most once).
const maxPublishChannels = 8

type channelEnvelope struct {
	Channel         string          `json:"channel" jsonschema:"the channel, e.g. computed-route.v1 or lifecycle-frontier.v1"`
	SourceWatermark uint64          `json:"source_watermark" jsonschema:"the producer's watermark: must not go down"`
	Envelope        json.RawMessage `json:"envelope" jsonschema:"the producer's typed envelope (JSON object)"`
}

type publishProjectionInput struct {
	TargetID             string            `json:"target_id"`
	HolderInstanceDigest string            `json:"holder_instance_digest" jsonschema:"sha256:<hex> identifying this writer process"`
	Channels             []channelEnvelope `json:"channels,omitempty" jsonschema:"envelopes to submit while holding the lease, before publishing (at most 8)"`
}

// channelsSchema is publish_projection's own property channels: an array
// of projection_submit's requests less target_id, which is the tool's.
func channelsSchema() map[string]any {
	doc, err := apiDocument()
	if err != nil {
		panic(fmt.Sprintf("mcptools: %v", err))
	}
	item, err := doc.request("post_v1_projection_channels_submit")
	if err != nil {
		panic(fmt.Sprintf("mcptools: publish_projection: %v", err))
	}
	delete(item["properties"].(map[string]any), "target_id")
	return map[string]any{"type": []any{"array", "null"}, "items": item}
}

type targetRef struct {
	TargetID string `json:"target_id"`
}

func (r *registrar) projection() {
	const d = "projection"
	add(r, tool{name: "projection_submit", domain: d, commands: []string{"projection_submit"}, op: "post_v1_projection_channels_submit",
		required:    []string{"target_id", "channel", "source_watermark", "envelope"},
		description: "Submit a producer's envelope to its channel of a target. The same watermark and envelope again replay (status replayed); a lower watermark is stale_watermark; the same watermark with another envelope degrades the channel as a source conflict."},
		func(ctx context.Context, c *client.Client, in client.ChannelSubmitRequest) (any, error) {
			return c.Projection().Submit(ctx, in)
		})
	add(r, tool{name: "projection_acquire", domain: d, commands: []string{"projection_acquire"}, op: "post_v1_projection_leases_acquire",
		required:    []string{"target_id", "holder_instance_digest"},
		description: "Take a target's single-writer lease: its token (answered once) and fencing_epoch are what projection_publish and projection_release need. A lease held by another is conflict with detail fencing_epoch, expires_at_ms and retry_after_ms: wait that long. Prefer publish_projection, which also releases on failure."},
		func(ctx context.Context, c *client.Client, in client.ProjectionAcquireRequest) (any, error) {
			return c.Projection().Acquire(ctx, in)
		})
	add(r, tool{name: "projection_publish", domain: d, commands: []string{"projection_publish"}, op: "post_v1_projection_publish",
		required:    []string{"target_id", "token", "fencing_epoch"},
		description: "Publish the target's channels as current.json under your lease (which it consumes); a retry of the same publish replays. A token or epoch that no longer holds the lease is stale_fence: another writer took over and nothing was written."},
		func(ctx context.Context, c *client.Client, in client.FenceRequest) (any, error) {
			return c.Projection().Publish(ctx, in)
		})
	add(r, tool{name: "projection_release", domain: d, commands: []string{"projection_release"}, op: "post_v1_projection_leases_release",
		required:    []string{"target_id", "token", "fencing_epoch"},
		description: "Release your lease on a target (token and epoch checked: a stale holder cannot release a successor's lease; released false when it had already ended)."},
		func(ctx context.Context, c *client.Client, in client.FenceRequest) (any, error) {
			return c.Projection().Release(ctx, in)
		})
	add(r, tool{name: "publish_projection", domain: d, commands: []string{"projection_acquire", "projection_publish", "projection_release"},
		op: "post_v1_projection_leases_acquire", extra: map[string]any{"channels": channelsSchema()},
		required: []string{"target_id", "holder_instance_digest",
			"channels[].channel", "channels[].source_watermark", "channels[].envelope"},
		description: "Publish a target's projection in one call: acquire its lease, submit the given channel envelopes, publish current.json, and release the lease (token and epoch checked) if any step fails. Another writer holding the lease is conflict with retry_after_ms, and nothing is written. The result is the publication (publication_seq, fencing_epoch, sha256)."},
		func(ctx context.Context, c *client.Client, in publishProjectionInput) (any, error) {
			if len(in.Channels) > maxPublishChannels {
				return nil, errs.Errorf(errs.CodeInvalid, "channels: at most %d, not %d", maxPublishChannels, len(in.Channels))
			}
			p := c.Projection()
			return p.Hold(ctx, in.TargetID, in.HolderInstanceDigest, func(ctx context.Context, _ *client.ProjectionLease) error {
				for _, ch := range in.Channels {
					if _, err := p.Submit(ctx, client.ChannelSubmitRequest{TargetID: in.TargetID, Channel: ch.Channel,
						SourceWatermark: ch.SourceWatermark, Envelope: ch.Envelope}); err != nil {
						return err
					}
				}
				return nil
			})
		})
	add(r, tool{name: "projection_target", domain: d, readOnly: true, op: "get_v1_projection_targets_target_id",
		fills: linearizable, required: []string{"target_id"},
		description: "Read a target: its channels (status, watermark), its lease (holder, epoch, expiry) and its last publication."},
		func(ctx context.Context, c *client.Client, in targetRef) (any, error) {
			return c.Projection().Target(ctx, in.TargetID, client.Linearizable)
		})
}
