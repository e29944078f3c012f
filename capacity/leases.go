package capacity

import (
	"fmt"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// leasesCmd is the payload of CmdRenew and CmdRelease before graphs.
type leasesCmd struct {
	TenantRef   string     `msgpack:"tenant_ref"`
	OwnerDigest string     `msgpack:"owner_digest"`
	Leases      []LeaseRef `msgpack:"leases"`
	TTLMs       int64      `msgpack:"ttl_ms"`
}

// leasesInGraph is their payload from version 2 on: it may name a graph.
type leasesInGraph struct {
	leasesCmd
	GraphRef string `msgpack:"graph_ref,omitempty"`
}

// prevalidate checks every named lease before anything changes, so a batch
// is all-or-nothing. It returns the stored leases in request order, or the
// decision that refuses the batch.
func prevalidate(tx *fsm.Tx, c *leasesInGraph) ([]*Lease, Decision, string, error) {
	out := make([]*Lease, 0, len(c.Leases))
	for _, ref := range c.Leases {
		l, err := getLease(tx, c.GraphRef, c.TenantRef, ref.LeaseID)
		if err != nil {
			return nil, "", "", err
		}
		switch {
		case l == nil:
			return nil, Invalid, fmt.Sprintf("no lease %q", ref.LeaseID), nil
		case l.OwnerDigest != c.OwnerDigest:
			return nil, StaleFence, fmt.Sprintf("lease %q has another owner", ref.LeaseID), nil
		case l.State == LeaseExpired || (l.State == LeaseActive && tx.Now >= l.ExpiresAtMs):
			return nil, Expired, fmt.Sprintf("lease %q expired at %d", ref.LeaseID, l.ExpiresAtMs), nil
		case l.State != LeaseActive:
			return nil, StaleFence, fmt.Sprintf("lease %q is %s", ref.LeaseID, l.State), nil
		case l.Fence != ref.Fence:
			return nil, StaleFence, fmt.Sprintf("lease %q holds fence %d, not %d", ref.LeaseID, l.Fence, ref.Fence), nil
		case l.LeaseEpoch != ref.LeaseEpoch:
			return nil, StaleEpoch, fmt.Sprintf("lease %q is at epoch %d, not %d", ref.LeaseID, l.LeaseEpoch, ref.LeaseEpoch), nil
		}
		out = append(out, l)
	}
	return out, "", "", nil
}

// leasesCommand is capacity_renew or capacity_release (op): a member of
// the tenant acts on the leases of the owner digest of its own
// principal, apply on each of them.
func leasesCommand(op string, apply func(tx *fsm.Tx, c *leasesInGraph, l *Lease) (*Lease, error)) fsm.Typed[leasesInGraph] {
	t := graphCommand(func(c *leasesInGraph) any { return &c.leasesCmd },
		func(c *leasesInGraph) (string, string) { return c.GraphRef, c.TenantRef }, op)
	t.Validate = (*leasesInGraph).validate
	t.Checks = append(t.Checks, func(_ *fsm.Tx, _ *log.Command, c *leasesInGraph) error { return checkOwnerDigest(c.OwnerDigest) })
	t.Role, t.Tenant = identity.RoleMember, func(c *leasesInGraph) string { return c.TenantRef }
	t.Forbidden = func(p identity.Principal, c *leasesInGraph) error { return mayNotHold(p, c.TenantRef) }
	t.Apply = func(tx *fsm.Tx, _ *log.Command, c *leasesInGraph) (any, error) { return applyLeases(tx, c, apply) }
	return t
}

// applyRenew advances the expiry (from FSM time) and the epoch of every
// lease, or of none.
func applyRenew(tx *fsm.Tx, c *leasesInGraph, l *Lease) (*Lease, error) {
	ttl := c.TTLMs
	if ttl == 0 {
		ttl = l.TTLMs
	}
	return renew(tx, l, ttl)
}

// applyRelease returns every lease's usage to its cell and terminalizes
// it, or does nothing.
func applyRelease(tx *fsm.Tx, _ *leasesInGraph, l *Lease) (*Lease, error) {
	return end(tx, l, LeaseReleased)
}

// applyLeases runs each on every named lease once all of them passed
// prevalidate; a refusal of any lease is the batch's decision.
func applyLeases(tx *fsm.Tx, c *leasesInGraph, each func(*fsm.Tx, *leasesInGraph, *Lease) (*Lease, error)) (any, error) {
	if err := checkOwner(tx.Principal, c.OwnerDigest); err != nil {
		return nil, err
	}
	res := &LeasesResult{SchemaVersion: SchemaVersion, Leases: []Lease{}, NowMs: tx.Now}
	leases, d, msg, err := prevalidate(tx, c)
	if err != nil || d != "" {
		tx.Refuse() // a refused batch changed nothing: a retry asks again
		res.Decision, res.Message = d, msg
		return res, err
	}
	for _, l := range leases {
		n, err := each(tx, c, l)
		if err != nil {
			return nil, err
		}
		res.Leases = append(res.Leases, *n)
	}
	res.Decision = Granted
	return res, nil
}
