package workitem

import (
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// claimCmd is the payload of CmdClaim.
type claimCmd struct {
	TenantRef  string   `msgpack:"tenant_ref"`
	GraphRef   string   `msgpack:"graph_ref"`
	OwnerRef   string   `msgpack:"owner_ref"`
	Kinds      []string `msgpack:"kinds"`
	WorkItemID string   `msgpack:"work_item_id"`
	TTLMs      int64    `msgpack:"ttl_ms"`
}

func (c *claimCmd) validate() error {
	if err := checkScope(c.TenantRef, c.GraphRef); err != nil {
		return err
	}
	if err := ident("owner_ref", c.OwnerRef); err != nil {
		return err
	}
	if err := optionalIdent("work_item_id", c.WorkItemID); err != nil {
		return err
	}
	if len(c.Kinds) > MaxKinds {
		return fieldErr("kinds", "names %d kinds, more than %d", len(c.Kinds), MaxKinds)
	}
	for i, k := range c.Kinds {
		if err := ident("kinds", k); err != nil {
			return err
		}
		if slices.Contains(c.Kinds[:i], k) {
			return fieldErr("kinds", "names %q twice", k)
		}
	}
	return checkTTL(c.TTLMs)
}

// applyClaim gives the caller the best claimable item of the graph: the
// highest priority, then the lowest sequence, among pending items whose
// dependencies all succeeded and whose deadline has not passed
// (optionally of the given kinds, or the one named). The claim's fence is
// the command's log index: larger than any fence the item had, and never
// handed out again, also after a backup is restored. None claimable:
// not_found, and nothing changes.
func applyClaim(tx *fsm.Tx, cmd *log.Command, c *claimCmd) (any, error) {
	if cmd.IdemKey != "" {
		if err := checkIdemScope(tx, cmd, opClaim, c.TenantRef, c.GraphRef, claimTenantLedger, "a keyed claim"); err != nil {
			return nil, err
		}
	}
	row, err := pick(tx, c)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, errs.Errorf(errs.CodeNotFound, "no claimable work item in graph %q of tenant %q", c.GraphRef, c.TenantRef)
	}
	old, err := getItem(tx, c.TenantRef, row.WorkItemID)
	if err != nil {
		return nil, err
	}
	if old == nil || !ready(old) {
		return nil, errs.Errorf(errs.CodeInternal, "ready index names work item %s, which is not claimable", row.WorkItemID)
	}
	it := *old
	it.Status, it.Attempt, it.Fence = StatusClaimed, old.Attempt+1, tx.Index
	it.OwnerRef, it.ClaimedBy, it.ClaimExpiresAtMs, it.UpdatedAtMs = c.OwnerRef, tx.Principal.ID, tx.Now+c.TTLMs, tx.Now
	if err := put(tx, old, &it); err != nil {
		return nil, err
	}
	if err := tx.Insert(tableClaims, timeOf(it.ClaimExpiresAtMs, &it)); err != nil {
		return nil, internal("index claim expiry", err)
	}
	if _, err := emit(tx, EventClaimed, &it); err != nil {
		return nil, err
	}
	return &ClaimResult{WorkItem: it, Attempt: it.Attempt, Fence: it.Fence, ExpiresAtMs: it.ClaimExpiresAtMs}, nil
}

// pick finds the item to claim, reading only: at most MaxScanRows rows,
// passing over items whose deadline has passed (Tick fails them).
func pick(tx *fsm.Tx, c *claimCmd) (*readyRow, error) {
	if c.WorkItemID != "" {
		raw, err := tx.First(tableReady, "id", c.TenantRef, c.WorkItemID)
		if err != nil {
			return nil, internal("read ready item", err)
		}
		if raw == nil {
			return nil, nil
		}
		r := raw.(*readyRow)
		if r.GraphRef != c.GraphRef || (len(c.Kinds) > 0 && !slices.Contains(c.Kinds, r.Kind)) || expired(r, tx.Now) {
			return nil, nil
		}
		return r, nil
	}
	scanned := 0
	first := func(index string, args ...any) (*readyRow, error) {
		it, err := tx.LowerBound(tableReady, index, args...)
		if err != nil {
			return nil, internal("scan ready items", err)
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			r := raw.(*readyRow)
			if r.TenantRef != c.TenantRef || r.GraphRef != c.GraphRef || (index == "kind" && r.Kind != args[2]) {
				return nil, nil
			}
			if !expired(r, tx.Now) {
				return r, nil
			}
			if scanned++; scanned >= MaxScanRows {
				return nil, errs.Errorf(errs.CodeBackpressure, "passed over %d items past their deadline; try again once they have been failed", scanned)
			}
		}
		return nil, nil
	}
	if len(c.Kinds) == 0 {
		return first("order", c.TenantRef, c.GraphRef, uint64(0), uint64(0))
	}
	var best *readyRow
	for _, k := range c.Kinds {
		r, err := first("kind", c.TenantRef, c.GraphRef, k, uint64(0), uint64(0))
		if err != nil {
			return nil, err
		}
		if r != nil && (best == nil || r.Rank < best.Rank || r.Rank == best.Rank && r.Sequence < best.Sequence) {
			best = r
		}
	}
	return best, nil
}

func expired(r *readyRow, now int64) bool { return r.DeadlineAtMs != 0 && now >= r.DeadlineAtMs }
