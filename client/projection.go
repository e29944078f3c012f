package client

import (
	"context"
	"net/http"

	"github.com/arbiterhq/arbiter/errs"
)

// Projection is hook projections (/v1/projection): producers submit
// envelopes to a target's channels; a writer acquires the target's
// single-writer lease and publishes current.json, fenced by the log.
//
// Hold is the writer's whole protocol. A lease held by another is
// errs.Conflict with detail {fencing_epoch, expires_at_ms,
// retry_after_ms}.
type Projection struct{ c *Client }

// Config returns the lease TTL (LeaseTTLMs 0: not configured).
func (s *Projection) Config(ctx context.Context, cons Consistency) (*ProjectionConfig, error) {
	return do[ProjectionConfig](ctx, s.c, get("/v1/projection/config", params("consistency", string(cons))))
}

// SetConfig sets the lease TTL (admin; 1..3600000 ms). Acquire answers
// errs.Unavailable until it is set.
func (s *Projection) SetConfig(ctx context.Context, req ConfigRequest) (*ProjectionConfig, error) {
	return do[ProjectionConfig](ctx, s.c, repeat(http.MethodPut, "/v1/projection/config", req))
}

// RegisterTarget admits a target: its id is derived from the attested
// tuple (the same tuple and bindings again answer it, Created false).
func (s *Projection) RegisterTarget(ctx context.Context, req TargetRequest) (*TargetResult, error) {
	return do[TargetResult](ctx, s.c, repeat(http.MethodPost, "/v1/projection/targets", req))
}

// Target returns the target's channels, lease and last publication.
func (s *Projection) Target(ctx context.Context, targetID string, cons Consistency) (*TargetView, error) {
	return do[TargetView](ctx, s.c, get(pathOf("projection", "targets", targetID), params("consistency", string(cons))))
}

// Current returns the last publication, byte for byte current.json.
func (s *Projection) Current(ctx context.Context, targetID string, cons Consistency) ([]byte, error) {
	_, body, err := s.c.exchange(ctx, get(pathOf("projection", "targets", targetID, "current"), params("consistency", string(cons))))
	return body, err
}

// Submit submits a producer's envelope to its channel. The same
// watermark and envelope again replay (Status "replayed"); a lower
// watermark is StaleWatermark.
func (s *Projection) Submit(ctx context.Context, req ChannelSubmitRequest) (*ChannelSubmitResult, error) {
	return do[ChannelSubmitResult](ctx, s.c, repeat(http.MethodPost, "/v1/projection/channels/submit", req))
}

// Acquire takes the target's lease: Token (given once) and FencingEpoch
// to publish or release with. Its token is answered once, so an unknown
// outcome is learned by waiting for the lease's TTL, not by a repeat.
func (s *Projection) Acquire(ctx context.Context, req ProjectionAcquireRequest) (*ProjectionLease, error) {
	return do[ProjectionLease](ctx, s.c, post("/v1/projection/leases/acquire", req, ""))
}

// Publish publishes the target's channels as current.json under the
// lease (which it consumes); a retry of the same publish replays. File
// says what the answering node did with its file.
func (s *Projection) Publish(ctx context.Context, req FenceRequest) (*PublishResult, error) {
	return do[PublishResult](ctx, s.c, repeat(http.MethodPost, "/v1/projection/publish", req))
}

// Release releases the lease (token and epoch checked; Released false
// when it had already ended).
func (s *Projection) Release(ctx context.Context, req FenceRequest) (*ProjectionReleaseResult, error) {
	return do[ProjectionReleaseResult](ctx, s.c, repeat(http.MethodPost, "/v1/projection/leases/release", req))
}

// Hold runs the writer's protocol on a target: it acquires the lease,
// calls fn with it (submit the channels there), and publishes when fn
// returns nil (once more if the publish's outcome was unknown: a repeat
// replays it). A publication the answering node did not write (File
// "failed" or "pending") is errs.Unavailable with the result in
// Detail. Whatever fails, the lease is released with its token and
// epoch before the error is returned (a release that fails is dropped:
// the lease's TTL ends it).
func (s *Projection) Hold(ctx context.Context, targetID, holderInstanceDigest string, fn func(context.Context, *ProjectionLease) error) (*PublishResult, error) {
	lease, err := s.Acquire(ctx, ProjectionAcquireRequest{TargetID: targetID, HolderInstanceDigest: holderInstanceDigest})
	if err != nil {
		return nil, err
	}
	fence := FenceRequest{TargetID: targetID, Token: lease.Token, FencingEpoch: lease.FencingEpoch}
	res, err := s.publishHeld(ctx, lease, fence, fn)
	if err != nil {
		// A fresh context: the caller's may be what ended.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.c.timeout)
		_, _ = s.Release(rctx, fence) // consumed, ended or unreachable: the TTL ends it anyway
		cancel()
		return nil, err
	}
	return res, nil
}

func (s *Projection) publishHeld(ctx context.Context, lease *ProjectionLease, fence FenceRequest, fn func(context.Context, *ProjectionLease) error) (*PublishResult, error) {
	if err := fn(ctx, lease); err != nil {
		return nil, err
	}
	res, err := s.Publish(ctx, fence)
	if errs.IsOutcomeUnknown(err) {
		res, err = s.Publish(ctx, fence) // the same publish again replays it
	}
	if err != nil {
		return nil, err
	}
	if res.File == "failed" || res.File == "pending" {
		e := errs.Errorf(errs.CodeUnavailable, "publication %d of %s is recorded, but the answering node's current.json was not written (%s: %s); the node retries the write on its own",
			res.PublicationSeq, res.TargetID, res.File, res.FileError)
		e.Detail = map[string]any{"publication_seq": res.PublicationSeq, "file": res.File, "file_error": res.FileError}
		return nil, e
	}
	return res, nil
}
