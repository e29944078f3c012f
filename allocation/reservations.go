package allocation

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// Reserve-then-mutate, for hosts that mutate elsewhere: a reservation
// holds a create_task key for the space's window (FSM time), then the
// host commits it (the key's occupant becomes the object it made) or
// aborts it (the key is free again: no phantom). An expired reservation
// holds nothing from its expiry on; Tick drops its rows.

// reserveCmd is the payload of CmdReserve.
type reserveCmd struct {
	Space      string `msgpack:"space"`
	ProposalID string `msgpack:"proposal_id"`
	Intent     Intent `msgpack:"intent"`
}

// reservationCmd is the payload of CmdCommit, CmdAbort and CmdRelease.
type reservationCmd struct {
	Space      string  `msgpack:"space"`
	ProposalID string  `msgpack:"proposal_id"`
	Winner     *Winner `msgpack:"winner"` // commit only
}

func (c *reserveCmd) validate() error {
	if err := c.validateShape(); err != nil {
		return err
	}
	return c.Intent.validate(currentVersion)
}

// validateShape is what the FSM checks before it looks the proposal up.
func (c *reserveCmd) validateShape() error {
	if err := checkSlug(c.Space); err != nil {
		return err
	}
	if err := checkProposalID(c.ProposalID); err != nil {
		return err
	}
	return c.Intent.validateShape()
}

// applyReserve holds the intent's key for the space's window, unless a
// live occupant holds it (the flat 409). Reserving a live or committed
// proposal again with the same request answers it again (a retry);
// with another request, conflict. A proposal whose reservation expired
// may reserve anew. From version 2 on the proposal is looked up before
// the key is formed, so a retry stays its first answer after the space
// changed; version 1 formed the key first.
func applyReserve(tx *fsm.Tx, _ *log.Command, c *reserveCmd) (any, error) {
	v := tx.EnabledVersion(CmdReserve)
	sp, err := spaceIn(tx, tx.Principal, c.Space, identity.RoleMember)
	if err != nil {
		return nil, err
	}
	var bk boundKey
	if v < 2 {
		if bk, err = keyOf(sp, c.Intent, v); err != nil {
			return nil, err
		}
	}
	who := principalID(tx.Principal)
	digest := intentDigest(&c.Intent.Title, &c.Intent.DeliveryMode, c.Intent.WorkItemID)
	old, err := getReservation(tx, sp.Slug, c.ProposalID)
	if err != nil {
		return nil, err
	}
	if old != nil && (old.State == ReservationCommitted || tx.Now < old.ExpiresAtMs) {
		if old.Principal != who || old.Digest != digest {
			return nil, errs.Errorf(errs.CodeConflict, "proposal_id %q names another reservation", clip(c.ProposalID))
		}
		view := old.view()
		return &Outcome{Reservation: &view, Replayed: true}, nil
	}
	if v >= 2 {
		if bk, err = keyOf(sp, c.Intent, v); err != nil {
			return nil, err
		}
	}
	if o, err := liveOccupant(tx, sp.Slug, bk.key, tx.Now); err != nil {
		return nil, err
	} else if o != nil {
		cf, err := conflictOf(tx, o)
		if err != nil {
			return nil, err
		}
		return &Outcome{Conflict: cf}, nil
	}
	if old != nil { // expired, not yet dropped by Tick
		if err := dropReservation(tx, old); err != nil {
			return nil, err
		}
	}
	r := &reservationRow{Space: sp.Slug, ProposalID: c.ProposalID, Kind: bk.key.Kind, Target: bk.key.Target, DeliveryMode: bk.key.DeliveryMode,
		WorkItemID: bk.workItem, Principal: who, State: ReservationReserved, ExpiresAtMs: tx.Now + sp.Space.WindowMs,
		Digest: digest, CreatedAtMs: tx.Now}
	if err := tx.Insert(tableReservations, r); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "write reservation: %v", err)
	}
	if err := tx.Insert(tableExpiry, &expiryRow{AtMs: r.ExpiresAtMs, Space: r.Space, ProposalID: r.ProposalID}); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "index reservation: %v", err)
	}
	if err := occupy(tx, sp.Slug, bk.key, occupancyRow{WinnerType: WinnerReservedIntent, WinnerID: StrID(r.ProposalID),
		ProposalID: r.ProposalID, ExpiresAtMs: r.ExpiresAtMs}); err != nil {
		return nil, err
	}
	tx.Emit("allocation_reserved", sp.Slug+"/"+r.ProposalID, sp.Space.TenantRef)
	view := r.view()
	return &Outcome{Reservation: &view}, nil
}

// ownReservation reads the proposal's reservation and requires its
// principal or a controller of the space.
func ownReservation(tx *fsm.Tx, c *reservationCmd) (*spaceRow, *reservationRow, error) {
	sp, err := spaceIn(tx, tx.Principal, c.Space, identity.RoleMember)
	if err != nil {
		return nil, nil, err
	}
	r, err := getReservation(tx, sp.Slug, c.ProposalID)
	if err != nil {
		return nil, nil, err
	}
	if r == nil {
		return nil, nil, errs.Errorf(errs.CodeNotFound, "no reservation %q in space %q", clip(c.ProposalID), sp.Slug)
	}
	if r.Principal != principalID(tx.Principal) && !tx.Principal.HasRole(identity.RoleController) {
		return nil, nil, errs.Errorf(errs.CodeForbidden, "reservation %q is principal %q's", clip(c.ProposalID), r.Principal)
	}
	return sp, r, nil
}

// validate is the rule of an abort's or a release's payload: the
// reservation it names.
func (c *reservationCmd) validate() error {
	if err := checkSlug(c.Space); err != nil {
		return err
	}
	return checkProposalID(c.ProposalID)
}

// validateCommit is the rule of a commit's payload: a winner the host
// made elsewhere, then the reservation it names.
func (c *reservationCmd) validateCommit() error {
	if c.Winner == nil {
		return errs.New(errs.CodeInvalid, "winner {type, id} is required")
	}
	if err := bounds.Identifier("winner.type", c.Winner.Type); err != nil {
		return err
	}
	switch c.Winner.Type {
	case WinnerReservedIntent, WinnerTask, WinnerNote:
		return errs.Errorf(errs.CodeInvalid, "winner.type %q is the space's own; a commit names the object the host made elsewhere", c.Winner.Type)
	}
	if err := bounds.OptionalIdentifier("winner.id", c.Winner.ID.Str); err != nil {
		return err
	}
	return c.validate()
}

// applyCommit turns a live reservation into the key's occupancy by the
// object the host made (winner {type, id}); committing the same winner
// again answers the same.
func applyCommit(tx *fsm.Tx, _ *log.Command, c *reservationCmd) (any, error) {
	w := Winner{Type: c.Winner.Type, ID: c.Winner.ID}
	sp, r, err := ownReservation(tx, c)
	if err != nil {
		return nil, err
	}
	switch {
	case r.State == ReservationCommitted && r.Winner != nil && *r.Winner == w:
		return &Occupancy{ConflictKey: r.key(), Winner: w, ProposalID: r.ProposalID}, nil
	case r.State == ReservationCommitted:
		return nil, errs.Errorf(errs.CodeConflict, "reservation %q was committed to %s %s", clip(r.ProposalID), r.Winner.Type, r.Winner.ID)
	case tx.Now >= r.ExpiresAtMs:
		return nil, errs.Errorf(errs.CodeExpired, "reservation %q expired at %d (now %d)", clip(r.ProposalID), r.ExpiresAtMs, tx.Now)
	}
	if err := tx.Delete(tableExpiry, &expiryRow{AtMs: r.ExpiresAtMs, Space: r.Space, ProposalID: r.ProposalID}); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "unindex reservation: %v", err)
	}
	n := *r
	n.State, n.Winner, n.ExpiresAtMs = ReservationCommitted, &w, 0
	if err := tx.Insert(tableReservations, &n); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "write reservation: %v", err)
	}
	if err := occupy(tx, sp.Slug, r.key(), occupancyRow{WinnerType: w.Type, WinnerID: w.ID, ProposalID: r.ProposalID}); err != nil {
		return nil, err
	}
	tx.Emit("allocation_committed", sp.Slug+"/"+r.ProposalID, sp.Space.TenantRef)
	return &Occupancy{ConflictKey: r.key(), Winner: w, ProposalID: r.ProposalID}, nil
}

// AbortResult answers an abort or a release.
type AbortResult struct {
	ProposalID  string      `json:"proposal_id" msgpack:"proposal_id"`
	ConflictKey ConflictKey `json:"conflict_key" msgpack:"conflict_key"`
	Dropped     bool        `json:"dropped" msgpack:"dropped"`
}

// applyAbort drops a reservation that was not committed: its key is free
// at once. Aborting an unknown (already dropped) proposal is not_found.
func applyAbort(tx *fsm.Tx, _ *log.Command, c *reservationCmd) (any, error) {
	return endReservation(tx, c, false)
}

// applyRelease frees the key of a committed reservation once the host's
// object no longer needs it.
func applyRelease(tx *fsm.Tx, _ *log.Command, c *reservationCmd) (any, error) {
	return endReservation(tx, c, true)
}

func endReservation(tx *fsm.Tx, c *reservationCmd, committed bool) (any, error) {
	sp, r, err := ownReservation(tx, c)
	if err != nil {
		return nil, err
	}
	if committed != (r.State == ReservationCommitted) {
		if committed {
			return nil, errs.Errorf(errs.CodeConflict, "reservation %q is not committed: abort it", clip(r.ProposalID))
		}
		return nil, errs.Errorf(errs.CodeConflict, "reservation %q is committed: release it", clip(r.ProposalID))
	}
	if err := dropReservation(tx, r); err != nil {
		return nil, err
	}
	tx.Emit("allocation_dropped", r.Space+"/"+r.ProposalID, sp.Space.TenantRef)
	return &AbortResult{ProposalID: r.ProposalID, ConflictKey: r.key(), Dropped: true}, nil
}

// dropReservation deletes r, its expiry row and the key's occupancy if
// it is still r's.
func dropReservation(tx *fsm.Tx, r *reservationRow) error {
	if r.State == ReservationReserved {
		if err := tx.Delete(tableExpiry, &expiryRow{AtMs: r.ExpiresAtMs, Space: r.Space, ProposalID: r.ProposalID}); err != nil {
			return errs.Errorf(errs.CodeInternal, "unindex reservation: %v", err)
		}
		if err := vacate(tx, r.Space, r.key(), WinnerReservedIntent, StrID(r.ProposalID)); err != nil {
			return err
		}
	} else if r.Winner != nil {
		if err := vacate(tx, r.Space, r.key(), r.Winner.Type, r.Winner.ID); err != nil {
			return err
		}
	}
	if err := tx.Delete(tableReservations, r); err != nil {
		return errs.Errorf(errs.CodeInternal, "delete reservation: %v", err)
	}
	return nil
}
