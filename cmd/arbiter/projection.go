package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/spf13/cobra"
)

// `arbiter projection`: hook projections (/v1/projection).

func (a *app) projectionCommand() *cobra.Command {
	return group("projection", "hook projections: register targets, submit envelopes, acquire, publish and release leases",
		`projection speaks the hook projection routes (/v1/projection):

  projection config             print the lease TTL; with --lease-ttl set it (admin)
  projection target             register a target: its attested tuple and channel bindings
  projection submit             submit a producer's envelope to a channel
  projection acquire            take a target's single-writer lease (token and fencing_epoch)
  projection publish | release  publish current.json under the lease; release it
  projection show               a target's channels, lease and last publication (--current: current.json)

Every write takes typed flags; --filename FILE|-|JSON gives the whole request body
instead (refused together with the flags that set its fields). Digests are
given as they are (--holder sha256:...) or computed from text or a file
(--holder-text, --holder-file). Answers print as JSON (-o table for a table).
publish exits 1 when the answering node did not write its current.json
("file": "failed" or "pending"); a lease another holds, or a stale fence,
exits 3.

  arbiter projection config --lease-ttl 30s
  arbiter projection acquire --target pt_... --holder-text my-instance
  arbiter projection publish --target pt_... --lease-token TOKEN --epoch N
  arbiter projection show --target pt_... --current`,
		a.projectionConfigCommand(), a.projectionTargetCommand(), a.projectionSubmitCommand(), a.projectionAcquireCommand(),
		a.projectionFenceCommand("publish"), a.projectionFenceCommand("release"), a.projectionShowCommand())
}

// targetFlag registers --target, a body field.
func targetFlag(cmd *cobra.Command) *string {
	t := cmd.Flags().String("target", "", "target_id (pt_...; required)")
	markBody(cmd.Flags(), "target")
	return t
}

func (a *app) projectionConfigCommand() *cobra.Command {
	cmd, o := a.apiCommand("config [--lease-ttl D] [--stale]",
		"print the lease TTL, or set it with --lease-ttl (admin)",
		`config prints {lease_ttl_ms, configured}; with --lease-ttl (1ms..1h) or --filename
({lease_ttl_ms}) it sets the TTL and prints {..., changed}. Until it is set,
acquire answers 503.`, nil)
	fs := cmd.Flags()
	ttl := fs.Duration("lease-ttl", 0, "set lease_ttl_ms, e.g. 30s")
	markBody(fs, "lease-ttl")
	stale := staleFlag(fs)
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		if !fs.Changed("lease-ttl") && *body == "" {
			return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
				return c.Projection().Config(ctx, consistencyOf(stale))
			})
		}
		if *stale {
			return usageErrorf("--stale is for reading the config, not setting it")
		}
		var req client.ConfigRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if *ttl <= 0 {
				return usageErrorf("--lease-ttl %v: want a positive duration", *ttl)
			}
			req = client.ConfigRequest{LeaseTTLMs: ttl.Milliseconds()}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Projection().SetConfig(ctx, req)
		})
	}
	return cmd
}

func (a *app) projectionTargetCommand() *cobra.Command {
	cmd, o := a.apiCommand("target --capability C --harness-type H --instance-key-text K --workspace-key-text W --projection-kind P --channel CHANNEL=PRODUCER... [--agent-id A]",
		"register a target: its attested tuple and channel bindings",
		`target admits a target and prints {target_id, created}: its id is derived from
the attested tuple, so the same tuple and bindings again answer it (created
false); other bindings exit 3. The two key digests are given as they are
(--instance-key sha256:...) or computed from the key's text or file (never
send a raw key). --filename gives the whole body instead of the field flags.`, nil)
	fs := cmd.Flags()
	schema := fs.String("schema-version", "1", "attested.schema_version")
	capability := fs.String("capability", "", "attested.capability (required)")
	harness := fs.String("harness-type", "", "attested.harness_type (required)")
	kind := fs.String("projection-kind", "", "attested.projection_kind (required)")
	channels := fs.StringArray("channel", nil, "CHANNEL=PRODUCER, a channel binding (repeat)")
	agent := fs.String("agent-id", "", "agent_id (default: the caller)")
	markBody(fs, "schema-version", "capability", "harness-type", "projection-kind", "channel", "agent-id")
	instance := addDigestFlag(fs, "instance-key", "attested.instance_key_digest", "the instance key")
	workspace := addDigestFlag(fs, "workspace-key", "attested.workspace_key_digest", "the workspace key")
	markBody(fs, "instance-key", "instance-key-text", "instance-key-file", "workspace-key", "workspace-key-text", "workspace-key-file")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.TargetRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "capability", "harness-type", "projection-kind"); err != nil {
				return err
			}
			req = client.TargetRequest{AgentID: *agent, Channels: []client.ChannelBinding{},
				Attested: client.Attested{SchemaVersion: *schema, Capability: *capability, HarnessType: *harness, ProjectionKind: *kind}}
			var err error
			if req.Attested.InstanceKeyDigest, err = instance.value(); err != nil {
				return err
			}
			if req.Attested.WorkspaceKeyDigest, err = workspace.value(); err != nil {
				return err
			}
			for _, ch := range *channels {
				name, producer, ok := strings.Cut(ch, "=")
				if !ok || name == "" || producer == "" {
					return usageErrorf("--channel %q: want CHANNEL=PRODUCER", ch)
				}
				req.Channels = append(req.Channels, client.ChannelBinding{Channel: name, Producer: producer})
			}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Projection().RegisterTarget(ctx, req)
		})
	}
	return cmd
}

func (a *app) projectionSubmitCommand() *cobra.Command {
	cmd, o := a.apiCommand("submit --target ID --channel C --watermark N --envelope FILE|-",
		"submit a producer's envelope to a channel",
		`submit sends the envelope (a JSON object: a file, - for standard input, or the
JSON) to the target's channel at --watermark and prints {status: accepted or
replayed}. A lower watermark, or another envelope at the same one, exits 3.
--filename gives the whole body instead of the field flags.`, nil)
	target := targetFlag(cmd)
	fs := cmd.Flags()
	channel := fs.String("channel", "", "the channel (required)")
	watermark := fs.Uint64("watermark", 0, "source_watermark, rising (required)")
	envelope := fs.String("envelope", "", "the envelope: a JSON object, a file holding one, or - for standard input (required)")
	markBody(fs, "channel", "watermark", "envelope")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.ChannelSubmitRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "target", "channel", "watermark", "envelope"); err != nil {
				return err
			}
			raw, err := a.readSource("envelope", *envelope)
			if err != nil {
				return err
			}
			if !json.Valid(raw) {
				return usageErrorf("--envelope: not JSON")
			}
			req = client.ChannelSubmitRequest{TargetID: *target, Channel: *channel, SourceWatermark: *watermark, Envelope: raw}
			return nil
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Projection().Submit(ctx, req)
		})
	}
	return cmd
}

func (a *app) projectionAcquireCommand() *cobra.Command {
	cmd, o := a.apiCommand("acquire --target ID (--holder DIGEST | --holder-text T | --holder-file F)",
		"take a target's single-writer lease",
		`acquire takes the target's lease and prints {target_id, fencing_epoch, token,
expires_at_ms}: keep the token (answered once) and the epoch for publish or
release. While another holds it: exit 3, detail {fencing_epoch, expires_at_ms,
retry_after_ms}. An unknown outcome is learned by waiting out the lease TTL,
not by a repeat. --filename gives the whole body instead of the field flags.`, nil)
	target := targetFlag(cmd)
	fs := cmd.Flags()
	holder := addDigestFlag(fs, "holder", "holder_instance_digest", "the holder instance")
	markBody(fs, "holder", "holder-text", "holder-file")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.ProjectionAcquireRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "target"); err != nil {
				return err
			}
			d, err := holder.value()
			req = client.ProjectionAcquireRequest{TargetID: *target, HolderInstanceDigest: d}
			return err
		}); err != nil {
			return err
		}
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			return c.Projection().Acquire(ctx, req)
		})
	}
	return cmd
}

// projectionFenceCommand is publish or release: both present the lease.
func (a *app) projectionFenceCommand(name string) *cobra.Command {
	short, long := "publish the target's channels as current.json under the lease",
		`publish publishes the target's channels under the lease (which it consumes) and
prints {publication_seq, fencing_epoch, sha256, file, ...}; a retry of the same
publish replays. It exits 1 unless the answering node wrote its current.json
(or has no runtime root): "file" is then "failed" or "pending", and the node
retries the write on its own. A stale fence exits 3.`
	if name == "release" {
		short, long = "release the target's lease", `release releases the lease and prints {state, released} (released false when it
had already ended). A stale fence exits 3.`
	}
	cmd, o := a.apiCommand(name+" --target ID --lease-token T --epoch N", short,
		long+" --filename gives the whole body instead of the field flags.", nil)
	target := targetFlag(cmd)
	fs := cmd.Flags()
	token := fs.String("lease-token", "", "the token acquire answered (required)")
	epoch := fs.Uint64("epoch", 0, "the fencing_epoch acquire answered (required)")
	markBody(fs, "lease-token", "epoch")
	body := jsonFlag(fs)
	cmd.RunE = func(*cobra.Command, []string) error {
		var req client.FenceRequest
		if err := a.bodyOr(fs, *body, &req, func() error {
			if err := requireFlags(fs, "target", "lease-token", "epoch"); err != nil {
				return err
			}
			req = client.FenceRequest{TargetID: *target, Token: *token, FencingEpoch: *epoch}
			return nil
		}); err != nil {
			return err
		}
		var published *client.PublishResult
		if err := a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			if name == "release" {
				return c.Projection().Release(ctx, req)
			}
			var err error
			published, err = c.Projection().Publish(ctx, req)
			return published, err
		}); err != nil {
			return err
		}
		if published != nil && (published.File == "failed" || published.File == "pending") {
			// No success without the file, as projection's Holder fails.
			return errs.Errorf(errs.CodeUnavailable, "publication %d of %s is recorded, but the answering node's current.json was not written (%s: %s); the node retries the write on its own",
				published.PublicationSeq, published.TargetID, published.File, published.FileError)
		}
		return nil
	}
	return cmd
}

func (a *app) projectionShowCommand() *cobra.Command {
	cmd, o := a.apiCommand("show --target ID [--current] [--stale]",
		"a target's channels, lease and last publication",
		`show prints {target_id, channels, lease, last_publication, ...}; with --current,
the last publication, current.json (indented with -o json; 404 before the first:
exit 1).`, nil)
	target := cmd.Flags().String("target", "", "target_id (pt_...)")
	_ = cmd.MarkFlagRequired("target")
	cur := cmd.Flags().Bool("current", false, "print the target's current.json instead")
	stale := staleFlag(cmd.Flags())
	cmd.RunE = func(*cobra.Command, []string) error {
		return a.call(o, func(ctx context.Context, c *client.Client) (any, error) {
			if !*cur {
				return c.Projection().Target(ctx, *target, consistencyOf(stale))
			}
			raw, err := c.Projection().Current(ctx, *target, consistencyOf(stale))
			if err != nil {
				return nil, err
			}
			return json.RawMessage(raw), nil
		})
	}
	return cmd
}
