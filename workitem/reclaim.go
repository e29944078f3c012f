package workitem

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// reclaimCmd is the payload of CmdReclaim.
type reclaimCmd struct {
	TenantRef string `msgpack:"tenant_ref"`
	HostID    string `msgpack:"host_id"`
	MaxCount  int    `msgpack:"max_count"`
	Cursor    string `msgpack:"cursor"`
}

func (c *reclaimCmd) validate() error {
	if err := optionalIdent("tenant_ref", c.TenantRef); err != nil {
		return err
	}
	if err := optionalOpaque("host_id", c.HostID); err != nil {
		return err
	}
	if c.MaxCount < 1 || c.MaxCount > MaxReclaim {
		return fieldErr("max_count", "must be between 1 and %d, not %d", MaxReclaim, c.MaxCount)
	}
	if len(c.Cursor) > maxResCursorLen {
		return fieldErr("cursor", "longer than %d bytes", maxResCursorLen)
	}
	return nil
}

// reclaimPos is a reclaim cursor's position: the last due reservation
// it looked at, in expiry order.
type reclaimPos struct {
	AtMs          int64  `msgpack:"at_ms"`
	ReservationID string `msgpack:"reservation_id"`
}

// applyReclaim ends, in one command, at most max_count reservations
// whose claim is over (FSM time at or past the claim's expiry, which
// Tick has not yet turned into a requeue): of one tenant (members of
// it) or of every tenant (controllers of every tenant), optionally of
// one host. It looks at no more than 8 x max_count due reservations;
// when it stops before the last, next_cursor continues after them.
func applyReclaim(tx *fsm.Tx, _ *log.Command, c *reclaimCmd) (any, error) {
	bind := c.TenantRef + "\x00" + c.HostID
	var after *reclaimPos
	if c.Cursor != "" {
		after = new(reclaimPos)
		if err := decodeResCursor("reclaim", bind, c.Cursor, after); err != nil {
			return nil, withField(err, "cursor")
		}
	}
	due, next, err := dueReservations(tx, c, after)
	if err != nil {
		return nil, err
	}
	res := &ReclaimResult{ReclaimedIDs: []string{}, NowMs: tx.Now}
	for _, row := range due {
		r, err := getReservation(tx, row.ReservationID)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, errs.Errorf(errs.CodeInternal, "active index names missing reservation %s", row.ReservationID)
		}
		if _, err := finish(tx, r, ReservationEnded, EndReclaimed); err != nil {
			return nil, err
		}
		res.ReclaimedIDs = append(res.ReclaimedIDs, r.ReservationID)
	}
	if next != nil {
		res.NextCursor = encodeResCursor("reclaim", bind, next)
	}
	return res, nil
}

// dueReservations lists the active reservations past their claim's
// expiry that c selects, reading at most 8 x max_count due rows (of the
// host asked for or not), and the position to go on from if it stopped
// early.
func dueReservations(tx *fsm.Tx, c *reclaimCmd, after *reclaimPos) ([]*activeRow, *reclaimPos, error) {
	start := reclaimPos{AtMs: -1 << 62}
	if after != nil {
		start = *after
	}
	index, args := "expiry", []any{start.AtMs, start.ReservationID}
	if c.TenantRef != "" {
		index, args = "tenant", []any{c.TenantRef, start.AtMs, start.ReservationID}
	}
	it, err := tx.LowerBound(tableResActive, index, args...)
	if err != nil {
		return nil, nil, internal("scan active reservations", err)
	}
	var due []*activeRow
	var last *reclaimPos
	scanned := 0
	for raw := it.Next(); raw != nil; raw = it.Next() {
		row := raw.(*activeRow)
		if (c.TenantRef != "" && row.TenantRef != c.TenantRef) || row.ExpiresAtMs > tx.Now {
			break
		}
		pos := reclaimPos{AtMs: row.ExpiresAtMs, ReservationID: row.ReservationID}
		if after != nil && pos == *after {
			continue
		}
		if len(due) == c.MaxCount || scanned == reclaimScanPerRow*c.MaxCount {
			return due, last, nil
		}
		scanned++
		last = &pos
		if c.HostID == "" || row.HostID == c.HostID {
			due = append(due, row)
		}
	}
	return due, nil, nil
}
