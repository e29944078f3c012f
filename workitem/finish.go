package workitem

import (
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// completeCmd is the payload of CmdComplete; cancelCmd of CmdCancel.
type completeCmd struct {
	TenantRef  string `msgpack:"tenant_ref"`
	WorkItemID string `msgpack:"work_item_id"`
	Attempt    int64  `msgpack:"attempt"`
	Fence      uint64 `msgpack:"fence"`
	Outcome    string `msgpack:"outcome"`
	ResultRef  string `msgpack:"result_ref"`
}

type cancelCmd struct {
	TenantRef  string `msgpack:"tenant_ref"`
	WorkItemID string `msgpack:"work_item_id"`
	Reason     string `msgpack:"reason"`
}

func (c *completeCmd) validate() error {
	if err := ident("tenant_ref", c.TenantRef); err != nil {
		return err
	}
	if err := ident("work_item_id", c.WorkItemID); err != nil {
		return err
	}
	if c.Outcome != StatusSucceeded && c.Outcome != StatusFailed {
		return fieldErr("outcome", "must be %q or %q", StatusSucceeded, StatusFailed)
	}
	if err := checkRange("attempt", c.Attempt, 1, MaxAttempts); err != nil {
		return err
	}
	if c.Fence == 0 {
		return fieldErr("fence", "must be the claim's fence (at least 1)")
	}
	if len(c.ResultRef) > MaxResultRefBytes || !utf8.ValidString(c.ResultRef) {
		return fieldErr("result_ref", "must be at most %d bytes of UTF-8, not %d bytes", MaxResultRefBytes, len(c.ResultRef))
	}
	return nil
}

func (c *cancelCmd) validate() error {
	if err := ident("tenant_ref", c.TenantRef); err != nil {
		return err
	}
	if err := ident("work_item_id", c.WorkItemID); err != nil {
		return err
	}
	return ident("reason", c.Reason)
}

// completeV2 is the version of workitem_complete from which sending the
// claimer's completion again is the claimer's (or a controller's) to
// hear: anyone else is forbidden, as for the completion itself; and an
// item that ended otherwise under the presented claim (cancelled, or
// completed with another outcome or result) is a conflict, not
// stale_fence: the claim was not stale, the item is over. Version 1
// answered both as such.
const completeV2 = 2

// applyComplete ends a claimed item succeeded or failed, fenced by the
// claim's exact attempt and fence (else stale_fence; an expired claim:
// expired; an item that ended otherwise under it: conflict, see
// completeV2). Only the principal that claimed it, a controller of its
// tenant or the embedding host may. Sending the same completion again
// answers the item as it ended, unchanged (a retry after an unknown
// outcome). Dependents learn of the end at once (up to InlineCascade of
// them) or from Tick.
func applyComplete(tx *fsm.Tx, _ *log.Command, c *completeCmd) (any, error) {
	old, err := existingItem(tx, c.TenantRef, c.WorkItemID)
	if err != nil {
		return nil, err
	}
	same := old.Attempt == c.Attempt && old.Fence == c.Fence
	v2 := tx.EnabledVersion(CmdComplete) >= completeV2
	claimer := old.ClaimedBy == tx.Principal.ID || tx.Principal.HasRole(identity.RoleController)
	if same && old.Status == c.Outcome && old.Reason == "" && old.ResultRef == c.ResultRef {
		if v2 && !claimer {
			return nil, errs.Errorf(errs.CodeForbidden, "work item %q was claimed by another principal", c.WorkItemID)
		}
		return &ItemResult{WorkItem: *old}, nil // this very completion, already applied
	}
	if v2 && same && old.Status != StatusPending && old.Status != StatusClaimed {
		e := errs.Errorf(errs.CodeConflict, "work item %q has ended %s", c.WorkItemID, old.Status)
		e.Detail = map[string]any{"status": old.Status, "attempt": old.Attempt, "fence": old.Fence}
		return nil, e
	}
	if old.Status != StatusClaimed || !same {
		e := errs.Errorf(errs.CodeStaleFence, "work item %q is %s at attempt %d fence %d; attempt %d fence %d was presented",
			c.WorkItemID, old.Status, old.Attempt, old.Fence, c.Attempt, c.Fence)
		e.Detail = map[string]any{"status": old.Status, "attempt": old.Attempt, "fence": old.Fence}
		return nil, e
	}
	if !claimer {
		return nil, errs.Errorf(errs.CodeForbidden, "work item %q was claimed by another principal", c.WorkItemID)
	}
	if tx.Now >= old.ClaimExpiresAtMs {
		return nil, errs.Errorf(errs.CodeExpired, "the claim of work item %q expired at %d (FSM time %d)", c.WorkItemID, old.ClaimExpiresAtMs, tx.Now)
	}
	it := *old
	it.ResultRef = c.ResultRef
	ended, err := end(tx, old, &it, c.Outcome, "")
	if err != nil {
		return nil, err
	}
	if err := cascadeNow(tx, ended); err != nil {
		return nil, err
	}
	return &ItemResult{WorkItem: *ended}, nil
}

// applyCancel cancels a pending or claimed item (any member of its
// tenant may); its claim, if any, ends with it. Cancelling a cancelled
// item answers it unchanged; one that succeeded or failed is a conflict.
func applyCancel(tx *fsm.Tx, _ *log.Command, c *cancelCmd) (any, error) {
	old, err := existingItem(tx, c.TenantRef, c.WorkItemID)
	if err != nil {
		return nil, err
	}
	switch {
	case old.Status == StatusCancelled:
		return &ItemResult{WorkItem: *old}, nil
	case old.Status != StatusPending && old.Status != StatusClaimed:
		e := errs.Errorf(errs.CodeConflict, "work item %q has ended %s", c.WorkItemID, old.Status)
		e.Detail = map[string]any{"status": old.Status}
		return nil, e
	}
	it := *old
	ended, err := end(tx, old, &it, StatusCancelled, c.Reason)
	if err != nil {
		return nil, err
	}
	if err := cascadeNow(tx, ended); err != nil {
		return nil, err
	}
	return &ItemResult{WorkItem: *ended}, nil
}

// end terminalizes an in-flight item: it (a copy of old, perhaps already
// changed) gets status and reason, ends its claim's reservation, leaves
// the claim, deadline and
// readiness indexes, counts out of the tenant's in-flight items, enters
// the ended index (for retention) and the cascade queue (for its
// dependents), and writes its outbox event.
func end(tx *fsm.Tx, old, it *WorkItem, status, reason string) (*WorkItem, error) {
	if old.Status != StatusPending && old.Status != StatusClaimed {
		return nil, errs.Errorf(errs.CodeInternal, "work item %s ends twice", old.WorkItemID)
	}
	if old.Status == StatusClaimed {
		// The claim ends here, and its reservation (if any) with it.
		why := EndClaimEnded
		if reason == ReasonAttemptsExhausted || reason == ReasonDeadlineExceeded {
			why = EndClaimExpired // only Tick ends a claimed item for these
		}
		if err := endWithClaim(tx, old, why); err != nil {
			return nil, err
		}
		if err := tx.Delete(tableClaims, timeOf(old.ClaimExpiresAtMs, old)); err != nil {
			return nil, internal("unindex claim", err)
		}
	}
	if d := deadlineMs(old); d != 0 {
		if err := deleteIfPresent(tx, tableDeadline, timeOf(d, old)); err != nil {
			return nil, err
		}
	}
	it.Status, it.Reason, it.EndedAtMs, it.UpdatedAtMs = status, reason, tx.Now, tx.Now
	if err := put(tx, old, it); err != nil {
		return nil, err
	}
	if err := addInFlight(tx, it.TenantRef, -1); err != nil {
		return nil, err
	}
	if err := tx.Insert(tableEnded, timeOf(tx.Now, it)); err != nil {
		return nil, internal("index ended item", err)
	}
	if err := tx.Insert(tableCascade, &cascadeRow{Index: tx.Index, TenantRef: it.TenantRef, WorkItemID: it.WorkItemID, Status: status}); err != nil {
		return nil, internal("queue cascade", err)
	}
	if _, err := emit(tx, endEvent(status), it); err != nil {
		return nil, err
	}
	return it, nil
}
