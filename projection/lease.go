package projection

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// acquireCmd is the payload of CmdAcquire. The serving node made the
// token; only its SHA-256 is here.
type acquireCmd struct {
	TargetID             string `msgpack:"target_id"`
	HolderInstanceDigest string `msgpack:"holder_instance_digest"`
	TokenSHA256          string `msgpack:"token_sha256"`
}

func (c *acquireCmd) validate() error {
	if err := CheckTargetID(c.TargetID); err != nil {
		return err
	}
	if err := checkDigest("holder_instance_digest", c.HolderInstanceDigest); err != nil {
		return err
	}
	return checkTokenHash(c.TokenSHA256)
}

// fenceCmd is the payload of CmdPublish and CmdRelease: the lease the
// holder names, by epoch and token hash.
type fenceCmd struct {
	TargetID     string `msgpack:"target_id"`
	TokenSHA256  string `msgpack:"token_sha256"`
	FencingEpoch uint64 `msgpack:"fencing_epoch"`
}

func (c *fenceCmd) validate() error {
	if err := CheckTargetID(c.TargetID); err != nil {
		return err
	}
	if err := checkTokenHash(c.TokenSHA256); err != nil {
		return err
	}
	return checkEpoch(c.FencingEpoch)
}

// errNotConfigured is what acquire answers until an admin sets
// lease_ttl_ms: loudly, never with a default.
func errNotConfigured() error {
	return errs.New(errs.CodeUnavailable, "projection lease_ttl_ms is not configured")
}

// applyAcquire grants the target's lease when it is unheld or its lease
// expired: a new fencing epoch (this entry's log index, so that epochs
// strictly increase and a restored backup can never make the cluster
// hand one out twice), expiry at FSM now + lease_ttl_ms. A held lease is
// a conflict that says when to retry; nothing is written.
func (h handlers) applyAcquire(tx *fsm.Tx, _ *log.Command, c *acquireCmd) (any, error) {
	cfg, err := getConfig(tx)
	if err != nil {
		return nil, err
	}
	if cfg.LeaseTTLMs <= 0 {
		return nil, errNotConfigured()
	}
	t, err := holdable(tx, c.TargetID)
	if err != nil {
		return nil, err
	}
	old, err := getLease(tx, c.TargetID)
	if err != nil {
		return nil, err
	}
	if old != nil && old.State == LeaseHeld && tx.Now < old.ExpiresAtMs {
		e := errs.Errorf(errs.CodeConflict, "target %s is held at fencing epoch %d until %d", t.TargetID, old.FencingEpoch, old.ExpiresAtMs)
		e.Detail = map[string]any{"fencing_epoch": old.FencingEpoch, "expires_at_ms": old.ExpiresAtMs, "retry_after_ms": old.ExpiresAtMs - tx.Now}
		return nil, e
	}
	if old != nil && old.FencingEpoch >= tx.Index {
		return nil, errs.Errorf(errs.CodeInternal, "lease of %s at epoch %d is ahead of log index %d", t.TargetID, old.FencingEpoch, tx.Index)
	}
	l := &leaseRow{TargetID: c.TargetID, FencingEpoch: tx.Index, HolderTokenSHA256: c.TokenSHA256,
		HolderInstanceDigest: c.HolderInstanceDigest, AcquiredAtMs: tx.Now, ExpiresAtMs: tx.Now + cfg.LeaseTTLMs, State: LeaseHeld}
	if err := tx.Insert(tableLeases, l); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "store lease: %v", err)
	}
	tx.Emit("projection_lease", c.TargetID, "")
	if w := h.writer(); w != nil {
		w.granted(tx, l.TargetID, l.FencingEpoch)
	}
	return &Lease{TargetID: l.TargetID, FencingEpoch: l.FencingEpoch, ExpiresAtMs: l.ExpiresAtMs}, nil
}

// applyRelease ends the lease the holder names, if it is still held. A
// token or epoch that is not the target's current lease is stale_fence:
// a stale holder can never release its successor's lease. Releasing a
// lease that already ended (published, released, expired) changes
// nothing and succeeds, so holders release on every path.
func applyRelease(tx *fsm.Tx, _ *log.Command, c *fenceCmd) (any, error) {
	if _, err := holdable(tx, c.TargetID); err != nil {
		return nil, err
	}
	l, err := fencedLease(tx, c)
	if err != nil {
		return nil, err
	}
	res := &ReleaseResult{TargetID: l.TargetID, FencingEpoch: l.FencingEpoch, State: l.stateAt(tx.Now)}
	if res.State != LeaseHeld {
		return res, nil
	}
	n := *l
	n.State, n.EndedAtMs = LeaseReleased, tx.Now
	if err := tx.Insert(tableLeases, &n); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "release lease: %v", err)
	}
	tx.Emit("projection_release", c.TargetID, "")
	res.State, res.Released = LeaseReleased, true
	return res, nil
}

// holdable is the target when tx's principal may hold its lease.
func holdable(tx *fsm.Tx, id string) (*targetRow, error) {
	t, err := getTarget(tx, id)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, missing(id)
	}
	if !t.mayHold(tx.Principal) {
		return nil, errs.Errorf(errs.CodeForbidden, "principal %q may not hold the lease of target %s (its agent or an admin only)", tx.Principal.ID, id)
	}
	return t, nil
}

// fencedLease is the target's lease when c names it: same epoch, same
// token hash. Anything else is stale_fence.
func fencedLease(s fsm.Store, c *fenceCmd) (*leaseRow, error) {
	l, err := getLease(s, c.TargetID)
	if err != nil {
		return nil, err
	}
	if l == nil || l.FencingEpoch != c.FencingEpoch || l.HolderTokenSHA256 != c.TokenSHA256 {
		return nil, errs.Errorf(errs.CodeStaleFence, "target %s has no lease at fencing epoch %d with that token", c.TargetID, c.FencingEpoch)
	}
	return l, nil
}

// stateAt is the lease's state at FSM time now: a held lease whose expiry
// now reached is expired.
func (l *leaseRow) stateAt(now int64) string {
	if l.State == LeaseHeld && now >= l.ExpiresAtMs {
		return LeaseExpired
	}
	return l.State
}

func getLease(s fsm.Store, target string) (*leaseRow, error) {
	raw, err := s.First(tableLeases, "id", target)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read lease: %v", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*leaseRow), nil
}
