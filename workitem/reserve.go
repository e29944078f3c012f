package workitem

import (
	"encoding/json"
	"fmt"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/canon"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// reserveCmd is the payload of CmdReserve.
type reserveCmd struct {
	TenantRef  string `msgpack:"tenant_ref"`
	WorkItemID string `msgpack:"work_item_id"`
	Attempt    int64  `msgpack:"attempt"`
	Fence      uint64 `msgpack:"fence"`
	HostID     string `msgpack:"host_id"`
}

func (c *reserveCmd) validate() error {
	if err := checkHolder(c.TenantRef, c.WorkItemID, c.Attempt, c.Fence); err != nil {
		return err
	}
	return optionalOpaque("host_id", c.HostID)
}

// reserveV2 is the version of workitem_reserve from which the item's
// record answers to extension.IdentifiersV2 (one holding a path, URL, shell
// syntax or token is not_reservable until an admin rewrites it) and the
// reservation records its holder (HeldBy).
const reserveV2 = 2

// reserveV3 is the version of workitem_reserve from which asking again
// for the reservation an item holds answers it only to a live claim: a
// holder whose claim has expired hears expired, even while the
// reservation is still active because no tick has ended it yet. Before,
// it heard the reservation, as if it still held it (the chaos test's
// reservation workload caught a stale holder told so, seed
// 1796479922484472087 of TestFaultsTCP/reservation).
const reserveV3 = 3

// checkHolder validates the fields that name a claim.
func checkHolder(tenant, id string, attempt int64, fence uint64) error {
	if err := ident("tenant_ref", tenant); err != nil {
		return err
	}
	if err := ident("work_item_id", id); err != nil {
		return err
	}
	if err := checkRange("attempt", attempt, 1, MaxAttempts); err != nil {
		return err
	}
	if fence == 0 {
		return fieldErr("fence", "must be the claim's fence (at least 1)")
	}
	return nil
}

// applyReserve reserves host resources for a claimed item in one
// command, all or nothing. In order: the claim (exactly this attempt
// and fence, else stale_fence; the claimer or a controller; not
// expired); the item's extension, re-read and its fingerprint
// recomputed (not_reservable, fingerprint_mismatch); its profile,
// enabled and complete (profile_disabled, profile_incomplete), and the
// demand within the profile's max (capacity); the host (see
// placement.go); the repository, branch and concurrency keys (see
// keys.go); the fairness group's debt. Then it consumes the capacity,
// takes the keys, charges the debt and writes the outbox event. Any
// refusal is a 409 with detail.reason, and nothing changed.
//
// An item holds at most one active reservation: asking again with the
// same attempt and fence (and no host, or the same host) answers the
// reservation it holds, unchanged, while the claim is live (reserveV3).
func applyReserve(tx *fsm.Tx, _ *log.Command, c *reserveCmd) (any, error) {
	it, err := existingItem(tx, c.TenantRef, c.WorkItemID)
	if err != nil {
		return nil, err
	}
	held, err := heldBy(tx, it)
	if err != nil {
		return nil, err
	}
	if held != nil && held.Attempt == c.Attempt && held.Fence == c.Fence {
		if tx.EnabledVersion(CmdReserve) >= reserveV3 {
			if err := checkClaim(tx, it, c.Attempt, c.Fence); err != nil {
				return nil, err
			}
		} else if it.ClaimedBy != tx.Principal.ID && !tx.Principal.HasRole(identity.RoleController) {
			return nil, errs.Errorf(errs.CodeForbidden, "work item %q was claimed by another principal", it.WorkItemID)
		}
		if c.HostID != "" && c.HostID != held.HostID {
			e := errs.Errorf(errs.CodeConflict, "work item %q holds reservation %s on host %q", c.WorkItemID, held.ReservationID, held.HostID)
			e.Detail = map[string]any{"reservation_id": held.ReservationID, "host_id": held.HostID}
			return nil, e
		}
		return &ReservationResult{Reservation: *held}, nil
	}
	if err := checkClaim(tx, it, c.Attempt, c.Fence); err != nil {
		return nil, err
	}
	if held != nil {
		return nil, errs.Errorf(errs.CodeInternal, "work item %s holds reservation %s of an ended claim", it.WorkItemID, held.ReservationID)
	}
	ext, err := reservable(it, rulesAt(tx, CmdReserve, reserveV2))
	if err != nil {
		return nil, err
	}
	prof, err := usableProfile(tx, ext)
	if err != nil {
		return nil, err
	}
	p := newPlacement(tx, c.TenantRef, ext, prof)
	host, err := p.pickHost(c.HostID)
	if err != nil {
		return nil, err
	}
	if err := checkExclusive(tx, c.TenantRef, ext); err != nil {
		return nil, err
	}
	debt, err := getDebt(tx, c.TenantRef, prof.Name, ext.Fairness.Group)
	if err != nil {
		return nil, err
	}
	now := debtAt(debt, tx.Now)
	after := now + ext.Fairness.Cost*milli
	if after > prof.Fairness.MaxDebt*milli {
		e := refuse(RefuseFairness, "fairness group %q owes %d; %d more would pass the profile's max_debt %d", ext.Fairness.Group, units(now), ext.Fairness.Cost, prof.Fairness.MaxDebt)
		e.Detail["debt"], e.Detail["cost"], e.Detail["max_debt"] = units(now), ext.Fairness.Cost, prof.Fairness.MaxDebt
		return nil, e
	}
	r := &Reservation{
		ReservationID: fmt.Sprintf("%s%d", generatedReservationPrefix, tx.Index), TenantRef: it.TenantRef, WorkItemID: it.WorkItemID,
		Attempt: it.Attempt, Fence: it.Fence, HostID: host.HostID, Dimensions: ext.Dimensions, Keys: keysOf(ext),
		ProfileName: prof.Name, ProfileVersion: prof.Version, Fingerprint: ext.Fingerprint, FairnessCost: ext.Fairness.Cost,
		FairnessDebtAfter: units(after), Status: ReservationActive, CreatedAtMs: tx.Now, ExpiresAtMs: it.ClaimExpiresAtMs, Index: tx.Index,
	}
	if tx.EnabledVersion(CmdReserve) >= reserveV2 {
		r.HeldBy = it.ClaimedBy
	}
	if err := take(tx, r, host); err != nil {
		return nil, err
	}
	if err := setDebt(tx, debt, debtRow{TenantRef: r.TenantRef, Profile: prof.Name, Group: ext.Fairness.Group, DebtMilli: after,
		AnchorMs: tx.Now, DecayPerS: prof.Fairness.DecayPerS}); err != nil {
		return nil, err
	}
	if err := emitReservation(tx, EventReserved, r); err != nil {
		return nil, err
	}
	return &ReservationResult{Reservation: *r}, nil
}

// checkClaim requires the item to be claimed at exactly attempt and
// fence (stale_fence), by the caller or with a controller's say
// (forbidden), and the claim not expired (expired).
func checkClaim(tx *fsm.Tx, it *WorkItem, attempt int64, fence uint64) error {
	if it.Status != StatusClaimed || it.Attempt != attempt || it.Fence != fence {
		e := errs.Errorf(errs.CodeStaleFence, "work item %q is %s at attempt %d fence %d; attempt %d fence %d was presented",
			it.WorkItemID, it.Status, it.Attempt, it.Fence, attempt, fence)
		e.Detail = map[string]any{"status": it.Status, "attempt": it.Attempt, "fence": it.Fence}
		return e
	}
	if it.ClaimedBy != tx.Principal.ID && !tx.Principal.HasRole(identity.RoleController) {
		return errs.Errorf(errs.CodeForbidden, "work item %q was claimed by another principal", it.WorkItemID)
	}
	if tx.Now >= it.ClaimExpiresAtMs {
		return errs.Errorf(errs.CodeExpired, "the claim of work item %q expired at %d (FSM time %d)", it.WorkItemID, it.ClaimExpiresAtMs, tx.Now)
	}
	return nil
}

// itemExtension reads metadata.resource_reservation: nil without one.
// Metadata is stored in canonical form, which is almost always plain
// (canon.Plain): then its members are read without decoding the rest.
// The record returned may alias meta, which nothing changes.
func itemExtension(meta []byte) (json.RawMessage, error) {
	var ext json.RawMessage
	if canon.PlainMembers(meta, func(k, v []byte) {
		if string(k) == extensionField {
			ext = v
		}
	}) {
		return ext, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(meta, &top); err != nil {
		return nil, fieldErr("metadata", "is not a JSON object: %v", err)
	}
	return top[extensionField], nil
}

// extensionField is the metadata field that holds the extension.
const extensionField = "resource_reservation"

// reservable re-reads the item's extension under rules r: none (an
// item from before the extension) or an unreadable one is
// not_reservable; a fingerprint that is not the record's is
// fingerprint_mismatch.
func reservable(it *WorkItem, r recordRules) (*extension.Extension, error) {
	raw, err := itemExtension(it.Metadata)
	if err != nil || raw == nil {
		return nil, refuse(RefuseNotReservable, "work item %q has no metadata.%s; an admin must rewrite it first", it.WorkItemID, extensionField)
	}
	ext, err := r.parse(raw)
	if err != nil {
		e := errs.From(err)
		if e.Detail["reason"] == extension.ReasonFingerprintMismatch {
			return nil, refuse(RefuseFingerprintMismatch, "work item %q: %s", it.WorkItemID, e.Message)
		}
		return nil, refuse(RefuseNotReservable, "work item %q: %s", it.WorkItemID, e.Message)
	}
	return ext, nil
}

// usableProfile is the extension's profile if it is loaded, enabled and
// complete, and the demand is within its max.
func usableProfile(s fsm.Store, ext *extension.Extension) (*Profile, error) {
	prof, err := getProfile(s, ext.Profile.Name, ext.Profile.Version)
	if err != nil {
		return nil, err
	}
	switch {
	case prof == nil:
		return nil, refuse(RefuseProfileDisabled, "profile %s version %s is not loaded", ext.Profile.Name, ext.Profile.Version)
	case prof.Mode == ModeDark || prof.Mode == ModeShadow:
		e := refuse(RefuseProfileDisabled, "profile %s version %s is %s", prof.Name, prof.Version, prof.Mode)
		e.Detail["mode"] = prof.Mode
		return nil, e
	}
	if missing := prof.missing(); len(missing) > 0 {
		e := refuse(RefuseProfileIncomplete, "profile %s version %s leaves %v empty (fail-closed markers, never defaulted)", prof.Name, prof.Version, missing)
		e.Detail["missing"] = missing
		return nil, e
	}
	err = ext.Dimensions.Each(func(name string, v int64) error {
		if m := dim(prof.Max, name); v > m {
			e := refuse(RefuseCapacity, "%s %d is above profile %s's max %d", name, v, prof.Name, m)
			e.Detail["dimension"], e.Detail["max"] = name, m
			return e
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return prof, nil
}

// take consumes the host's capacity, indexes the reservation as the
// item's active one and takes its keys.
func take(tx *fsm.Tx, r *Reservation, old *Host) error {
	h := *old
	h.Used = h.Used.Add(r.Dimensions)
	h.Reservations++
	// Saturating: only a new report resets it, and it must not wrap.
	h.Telemetry.DiskReservedMiB = min(h.Telemetry.DiskReservedMiB+r.Dimensions.DiskMiB, 1<<62)
	if err := tx.Insert(tableHosts, &h); err != nil {
		return internal("store host", err)
	}
	if err := tx.Insert(tableReservations, r); err != nil {
		return internal("store reservation", err)
	}
	if err := tx.Insert(tableResActive, activeOf(r)); err != nil {
		return internal("index reservation", err)
	}
	return holdKeys(tx, r, 1)
}

func activeOf(r *Reservation) *activeRow {
	return &activeRow{TenantRef: r.TenantRef, WorkItemID: r.WorkItemID, ReservationID: r.ReservationID, HostID: r.HostID, ExpiresAtMs: r.ExpiresAtMs}
}

func getReservation(s fsm.Store, id string) (*Reservation, error) {
	raw, err := s.First(tableReservations, "id", id)
	if err != nil {
		return nil, internal("read reservation", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*Reservation), nil
}

// heldBy is the item's active reservation, if any.
func heldBy(s fsm.Store, it *WorkItem) (*Reservation, error) {
	raw, err := s.First(tableResActive, "id", it.TenantRef, it.WorkItemID)
	if err != nil {
		return nil, internal("read active reservation", err)
	}
	if raw == nil {
		return nil, nil
	}
	r, err := getReservation(s, raw.(*activeRow).ReservationID)
	if err != nil {
		return nil, err
	}
	if r == nil || r.Status != ReservationActive {
		return nil, errs.Errorf(errs.CodeInternal, "active index names reservation %s, which is not active", raw.(*activeRow).ReservationID)
	}
	return r, nil
}
