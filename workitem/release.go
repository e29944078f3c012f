package workitem

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// releaseCmd is the payload of CmdRelease.
type releaseCmd struct {
	TenantRef     string `msgpack:"tenant_ref"`
	WorkItemID    string `msgpack:"work_item_id"`
	Attempt       int64  `msgpack:"attempt"`
	Fence         uint64 `msgpack:"fence"`
	ReservationID string `msgpack:"reservation_id"`
}

func (c *releaseCmd) validate() error {
	if err := checkHolder(c.TenantRef, c.WorkItemID, c.Attempt, c.Fence); err != nil {
		return err
	}
	return ident("reservation_id", c.ReservationID)
}

// releaseV2 is the version of workitem_release from which the holder
// is the reservation's own (HeldBy), not whoever holds the item's claim
// now: once a claim expired and Tick requeued the item (which clears
// its claimer but keeps its fence), the principal that held the
// reservation still gets its ended reservation back, and nobody else
// does. A reservation made before reserve version 2 names no holder:
// while its claim is the item's current one the claimer holds it, and
// once that claim has ended any member of the tenant hears it
// unchanged (it frees nothing then). Version 1 asked the item's current
// claimer whenever the fence was the item's, which refused the holder
// after a requeue. (The embedding host's claims have no claimer id:
// theirs are held as before version 2.)
const releaseV2 = 2

// applyRelease frees a reservation's capacity and keys, fenced by the
// claim's exact attempt and fence (else stale_fence): only its holder
// (or a controller) may (see releaseV2). Releasing a reservation that
// has already ended (released, or ended with its claim) answers it
// unchanged; its fairness charge stays and decays.
func applyRelease(tx *fsm.Tx, _ *log.Command, c *releaseCmd) (any, error) {
	r, err := getReservation(tx, c.ReservationID)
	if err != nil {
		return nil, err
	}
	if r == nil || r.TenantRef != c.TenantRef || r.WorkItemID != c.WorkItemID {
		return nil, errs.Errorf(errs.CodeNotFound, "no reservation %q of work item %q in tenant %q", c.ReservationID, c.WorkItemID, c.TenantRef)
	}
	if r.Attempt != c.Attempt || r.Fence != c.Fence {
		e := errs.Errorf(errs.CodeStaleFence, "reservation %s belongs to attempt %d fence %d; attempt %d fence %d was presented",
			r.ReservationID, r.Attempt, r.Fence, c.Attempt, c.Fence)
		e.Detail = map[string]any{"attempt": r.Attempt, "fence": r.Fence}
		return nil, e
	}
	it, err := getItem(tx, c.TenantRef, c.WorkItemID)
	if err != nil {
		return nil, err
	}
	if !holds(tx, r, it) {
		return nil, errs.Errorf(errs.CodeForbidden, "reservation %s of work item %q is held by another principal", r.ReservationID, c.WorkItemID)
	}
	if r.Status != ReservationActive {
		return &ReservationResult{Reservation: *r}, nil
	}
	ended, err := finish(tx, r, ReservationReleased, EndReleased)
	if err != nil {
		return nil, err
	}
	return &ReservationResult{Reservation: *ended}, nil
}

// finish ends an active reservation: it gives the host its capacity
// back, drops the keys and the active index, keeps the row (status,
// reason, end time) for ReservationRetention, and writes the event.
func finish(tx *fsm.Tx, old *Reservation, status, reason string) (*Reservation, error) {
	if old.Status != ReservationActive {
		return nil, errs.Errorf(errs.CodeInternal, "reservation %s ends twice", old.ReservationID)
	}
	h, err := getHost(tx, old.HostID)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errs.Errorf(errs.CodeInternal, "reservation %s names missing host %s", old.ReservationID, old.HostID)
	}
	host := *h
	host.Used = host.Used.Sub(old.Dimensions)
	host.Reservations--
	if err := host.Used.Each(func(name string, v int64) error {
		if v < 0 {
			return errs.Errorf(errs.CodeInternal, "host %s uses %d %s", host.HostID, v, name)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := tx.Insert(tableHosts, &host); err != nil {
		return nil, internal("store host", err)
	}
	if err := tx.Delete(tableResActive, activeOf(old)); err != nil {
		return nil, internal("unindex reservation", err)
	}
	if err := holdKeys(tx, old, -1); err != nil {
		return nil, err
	}
	r := *old
	r.Status, r.EndReason, r.EndedAtMs = status, reason, tx.Now
	if err := tx.Insert(tableReservations, &r); err != nil {
		return nil, internal("store reservation", err)
	}
	if err := tx.Insert(tableResEnded, &resTimeRow{AtMs: tx.Now, ReservationID: r.ReservationID}); err != nil {
		return nil, internal("index ended reservation", err)
	}
	kind := EventReservationEnded
	if status == ReservationReleased {
		kind = EventReservationReleased
	}
	if err := emitReservation(tx, kind, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// endWithClaim ends the reservation the item's claim holds, if any: the
// claim is ending in this very command (complete, cancel, expiry), and
// no reservation outlives its claim.
func endWithClaim(tx *fsm.Tx, it *WorkItem, reason string) error {
	r, err := heldBy(tx, it)
	if err != nil || r == nil {
		return err
	}
	_, err = finish(tx, r, ReservationEnded, reason)
	return err
}

// holds reports whether the caller may release r (it is the item, nil
// if it is gone): a controller always; otherwise its holder (see
// releaseV2).
func holds(tx *fsm.Tx, r *Reservation, it *WorkItem) bool {
	if tx.Principal.HasRole(identity.RoleController) {
		return true
	}
	if tx.EnabledVersion(CmdRelease) < releaseV2 {
		return it == nil || it.ClaimedBy == tx.Principal.ID || it.Fence != r.Fence
	}
	if r.HeldBy != "" {
		return r.HeldBy == tx.Principal.ID
	}
	// Made before reserve version 2, or for the embedding host (whose
	// id is empty): while the claim lasts, its claimer holds it; once
	// the claim has ended, so has the reservation, and the answer
	// changes nothing.
	if it != nil && it.Status == StatusClaimed && it.Fence == r.Fence {
		return it.ClaimedBy == tx.Principal.ID
	}
	return true
}
