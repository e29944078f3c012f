package projection

import (
	"context"
	"errors"
	"time"

	"github.com/arbiterhq/arbiter/errs"
)

// Holder is one writer process's side of a target's lease, for a host
// program: Publish acquires the lease, publishes under it and releases
// it on failure, with the token and epoch it was granted. A Wave-1 lease
// covers one publication and is never renewed.
type Holder struct {
	Service  *Service
	TargetID string
	// InstanceDigest identifies this writer instance (sha256:<64 hex>);
	// it is recorded with the lease, for operators.
	InstanceDigest string
	// ReleaseTimeout bounds the release after a failed publish, which
	// runs even when the publish's context has ended (default 5 s).
	ReleaseTimeout time.Duration
}

// Publish is acquire → publish, and release when the publish did not
// succeed. A held target is errs.Conflict, whose Detail says when the
// lease expires (retry_after_ms); a publish that came too late is
// errs.Expired and wrote nothing. The lease is never left held by a
// failure Publish saw.
//
// A publication the serving node did not write (File FileFailed or
// FilePending) is a failure too: Publish returns the result with an
// unavailable error saying so (the lease it consumed is released, which
// changes nothing); the node retries its write on its own, and refuses
// further publishes until one succeeds.
func (h *Holder) Publish(ctx context.Context) (*PublishResult, error) {
	lease, err := h.Service.Acquire(ctx, AcquireRequest{TargetID: h.TargetID, HolderInstanceDigest: h.InstanceDigest})
	if err != nil {
		return nil, err
	}
	fence := FenceRequest{TargetID: h.TargetID, Token: lease.Token, FencingEpoch: lease.FencingEpoch}
	res, err := h.Service.Publish(ctx, fence)
	if errs.IsOutcomeUnknown(err) && ctx.Err() == nil {
		// Publish is safe to repeat: the same lease answers the
		// publication it made, if it made one.
		res, err = h.Service.Publish(ctx, fence)
	}
	switch {
	case err != nil:
		res = nil
	case res.File == FileFailed || res.File == FilePending:
		err = notWritten(res)
	default:
		return res, nil
	}
	timeout := h.ReleaseTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if _, rerr := h.Service.Release(rctx, fence); rerr != nil && !errors.Is(rerr, errs.StaleFence) {
		return res, errors.Join(err, rerr)
	}
	return res, err
}

// notWritten is the error of a publication the serving node recorded and
// did not write.
func notWritten(res *PublishResult) error {
	e := errs.Errorf(errs.CodeUnavailable, "publication %d of %s is recorded, but the serving node's current.json was not written (%s: %s); the node retries the write on its own",
		res.PublicationSeq, res.TargetID, res.File, res.FileError)
	e.Detail = map[string]any{"publication_seq": res.PublicationSeq, "file": res.File, "file_error": res.FileError}
	return e
}
