package workitem

import (
	"bytes"
	"encoding/json"

	"github.com/arbiterhq/arbiter/fsm"
)

// The outbox of host resource reservation: every mutation writes, in the
// same command, one change-feed event. Host and profile events belong to
// no tenant; reservation events to the item's tenant, keyed by the
// reservation id, with the reservation (ReservationEvent) as payload.
const (
	EventHostPut             = "workitem_host_put"
	EventHostTelemetry       = "workitem_host_telemetry"
	EventProfilesSet         = "workitem_profiles_set"
	EventReserved            = "workitem_reserved"
	EventReservationReleased = "workitem_reservation_released"
	EventReservationEnded    = "workitem_reservation_ended"
	EventExtensionRewritten  = "workitem_extension_rewritten"
)

// ReservationEvent is the payload of the reservation events: the
// reservation as it became. Its identifiers are bounded (128 bytes in
// the extension, 512 for the item id), so it stays well inside
// fsm.MaxEventPayload.
type ReservationEvent struct {
	ReservationID     string     `json:"reservation_id"`
	WorkItemID        string     `json:"work_item_id"`
	Attempt           int64      `json:"attempt"`
	Fence             uint64     `json:"fence"`
	HostID            string     `json:"host_id"`
	Dimensions        Dimensions `json:"dimensions"`
	Keys              Keys       `json:"keys"`
	Profile           string     `json:"profile"`
	ProfileVersion    string     `json:"profile_version"`
	FairnessCost      int64      `json:"fairness_cost"`
	FairnessDebtAfter int64      `json:"fairness_debt_after"`
	Status            string     `json:"status"`
	EndReason         string     `json:"end_reason,omitempty"`
	ExpiresAtMs       int64      `json:"expires_at_ms"`
}

// HostEvent is the payload of the host events.
type HostEvent struct {
	HostID      string     `json:"host_id"`
	Epoch       uint64     `json:"epoch"`
	Capacity    Dimensions `json:"capacity"`
	Used        Dimensions `json:"used"`
	ReportSeq   uint64     `json:"report_seq"`
	DiskFreeMiB int64      `json:"disk_free_mib"`
}

// emitJSON writes one event whose payload is v as JSON.
func emitJSON(tx *fsm.Tx, kind, key, tenant string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return internal("encode outbox event", err)
	}
	_, err := tx.EmitPayload(kind, key, tenant, bytes.TrimSpace(buf.Bytes()))
	return err
}

func emitReservation(tx *fsm.Tx, kind string, r *Reservation) error {
	return emitJSON(tx, kind, r.ReservationID, r.TenantRef, ReservationEvent{
		ReservationID: r.ReservationID, WorkItemID: r.WorkItemID, Attempt: r.Attempt, Fence: r.Fence, HostID: r.HostID,
		Dimensions: r.Dimensions, Keys: r.Keys, Profile: r.ProfileName, ProfileVersion: r.ProfileVersion,
		FairnessCost: r.FairnessCost, FairnessDebtAfter: r.FairnessDebtAfter, Status: r.Status, EndReason: r.EndReason,
		ExpiresAtMs: r.ExpiresAtMs,
	})
}

func emitHost(tx *fsm.Tx, kind string, h *Host) error {
	return emitJSON(tx, kind, h.HostID, "", HostEvent{HostID: h.HostID, Epoch: h.Epoch, Capacity: h.Capacity, Used: h.Used,
		ReportSeq: h.Telemetry.ReportSeq, DiskFreeMiB: h.Telemetry.DiskFreeMiB})
}
