package workitem

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// tick is the module's share of every Tick, by FSM time only, each job
// at most budget rows, in this order:
//
//  1. deadlines: a pending item whose deadline has passed ends failed
//     (deadline_exceeded); a claimed one keeps its claim, which decides
//     when it ends;
//  2. claim expiry: an expired claim returns its item to pending for
//     another attempt, or ends it failed when max_attempts are used
//     (attempts_exhausted) or its deadline has passed;
//  3. the cascade queue (see cascade.go);
//  4. retention: ended items older than TerminalRetention whose cascade
//     is done are forgotten;
//  5. reservation retention: ended reservations older than
//     ReservationRetention are forgotten (a claim's end ends its
//     reservation in the same command, so none is left to reclaim here);
//  6. fairness: debts decay (see fairness.go).
func tick(tx *fsm.Tx, budget int) error {
	for _, job := range []func(*fsm.Tx, int) error{tickDeadlines, tickClaims, cascadeTick, tickRetention, tickReservationRetention, tickFairness} {
		if err := job(tx, budget); err != nil {
			return err
		}
	}
	return nil
}

// due lists at most budget rows of a time-ordered table at or before at.
func due(tx *fsm.Tx, table string, at int64, budget int) ([]*timeRow, error) {
	it, err := tx.Get(table, "id")
	if err != nil {
		return nil, internal("scan "+table, err)
	}
	var out []*timeRow
	for raw := it.Next(); raw != nil && len(out) < budget; raw = it.Next() {
		row := raw.(*timeRow)
		if row.AtMs > at {
			break
		}
		out = append(out, row)
	}
	return out, nil
}

func mustItem(tx *fsm.Tx, table string, row *timeRow) (*WorkItem, error) {
	it, err := getItem(tx, row.TenantRef, row.WorkItemID)
	if err != nil {
		return nil, err
	}
	if it == nil {
		return nil, errs.Errorf(errs.CodeInternal, "%s names missing work item %s/%s", table, row.TenantRef, row.WorkItemID)
	}
	return it, nil
}

func tickDeadlines(tx *fsm.Tx, budget int) error {
	rows, err := due(tx, tableDeadline, tx.Now, budget)
	if err != nil {
		return err
	}
	for _, row := range rows {
		old, err := mustItem(tx, tableDeadline, row)
		if err != nil {
			return err
		}
		switch old.Status {
		case StatusPending:
			it := *old
			if _, err := end(tx, old, &it, StatusFailed, ReasonDeadlineExceeded); err != nil {
				return err
			}
		case StatusClaimed:
			if err := tx.Delete(tableDeadline, row); err != nil {
				return internal("unindex deadline", err)
			}
		default:
			return errs.Errorf(errs.CodeInternal, "deadline index names ended work item %s", old.WorkItemID)
		}
	}
	return nil
}

func tickClaims(tx *fsm.Tx, budget int) error {
	rows, err := due(tx, tableClaims, tx.Now, budget)
	if err != nil {
		return err
	}
	for _, row := range rows {
		old, err := mustItem(tx, tableClaims, row)
		if err != nil {
			return err
		}
		if old.Status != StatusClaimed || old.ClaimExpiresAtMs != row.AtMs {
			return errs.Errorf(errs.CodeInternal, "claim index names work item %s, %s", old.WorkItemID, old.Status)
		}
		it := *old
		switch {
		case old.Attempt >= old.MaxAttempts:
			_, err = end(tx, old, &it, StatusFailed, ReasonAttemptsExhausted)
		case pastDeadline(old, tx.Now):
			_, err = end(tx, old, &it, StatusFailed, ReasonDeadlineExceeded)
		default:
			err = requeue(tx, old, &it)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// requeue returns a claimed item whose claim expired to pending: its
// attempt count and last fence stay, its owner and its reservation go.
func requeue(tx *fsm.Tx, old, it *WorkItem) error {
	if err := endWithClaim(tx, old, EndClaimExpired); err != nil {
		return err
	}
	if err := tx.Delete(tableClaims, timeOf(old.ClaimExpiresAtMs, old)); err != nil {
		return internal("unindex claim", err)
	}
	it.Status, it.OwnerRef, it.ClaimedBy, it.ClaimExpiresAtMs, it.UpdatedAtMs = StatusPending, "", "", 0, tx.Now
	if err := put(tx, old, it); err != nil {
		return err
	}
	_, err := emit(tx, EventRequeued, it)
	return err
}

func tickRetention(tx *fsm.Tx, budget int) error {
	rows, err := due(tx, tableEnded, tx.Now-TerminalRetention.Milliseconds(), budget)
	if err != nil {
		return err
	}
	for _, row := range rows {
		if queued, err := tx.First(tableCascade, "item", row.TenantRef, row.WorkItemID); err != nil {
			return internal("read cascade queue", err)
		} else if queued != nil {
			return nil // its dependents have not all heard yet; neither have later ones
		}
		it, err := mustItem(tx, tableEnded, row)
		if err != nil {
			return err
		}
		if err := tx.Delete(tableItems, it); err != nil {
			return internal("forget work item", err)
		}
		if err := tx.Delete(tableEnded, row); err != nil {
			return internal("unindex ended item", err)
		}
	}
	return nil
}
