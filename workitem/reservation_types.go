package workitem

import (
	"encoding/json"

	"github.com/arbiterhq/arbiter/workitem/extension"
)

// Dimensions are the four resource dimensions of a demand, a host's
// capacity or use, or a profile's maximum.
type Dimensions = extension.Dimensions

// Reservation statuses: active until released, or ended with its claim
// (complete, cancel, claim expiry) or by reclaim.
const (
	ReservationActive   = "active"
	ReservationReleased = "released"
	ReservationEnded    = "ended"
)

// Why a reservation ended (Reservation.EndReason).
const (
	EndReleased     = "released"
	EndClaimEnded   = "claim_ended"   // the item was completed or cancelled
	EndClaimExpired = "claim_expired" // Tick requeued or failed the item
	EndReclaimed    = "reclaimed"     // reclaim, after the claim expired
)

// The reasons a reservation is refused, in detail.reason of a 409.
const (
	RefuseCapacity            = "capacity"
	RefuseNoEligibleHost      = "no_eligible_host"
	RefuseAntiAffinity        = "anti_affinity"
	RefuseDiskWatermark       = "disk_watermark"
	RefuseTelemetryStale      = "telemetry_stale"
	RefuseRepositoryExclusive = "repository_exclusive"
	RefuseBranchExclusive     = "branch_exclusive"
	RefuseConcurrencyLimit    = "concurrency_limit"
	RefuseFairness            = "fairness"
	RefuseProfileDisabled     = "profile_disabled"
	RefuseProfileIncomplete   = "profile_incomplete"
	RefuseFingerprintMismatch = "fingerprint_mismatch"
	RefuseNotReservable       = "not_reservable"
)

// PutHostRequest registers or changes a shared host (controllers of
// every tenant). ExpectedEpoch, if set, must be the host's epoch (0: the
// host must not exist yet).
type PutHostRequest struct {
	HostID        string            `json:"host_id"`
	Labels        map[string]string `json:"labels"`
	Capacity      Dimensions        `json:"capacity"`
	ExpectedEpoch *uint64           `json:"expected_epoch,omitempty"`
}

// TelemetryRequest reports a host's free disk. ReportSeq must be above
// the host's last since it was registered or changed (a change resets
// it: see putHostV2); FSM time stamps the report.
type TelemetryRequest struct {
	HostID      string `json:"host_id"`
	ReportSeq   uint64 `json:"report_seq"`
	DiskFreeMiB int64  `json:"disk_free_mib"`
}

// Host is a shared host as the FSM holds it.
type Host struct {
	HostID   string            `json:"host_id" msgpack:"host_id"`
	Labels   map[string]string `json:"labels" msgpack:"labels"`
	Capacity Dimensions        `json:"capacity" msgpack:"capacity"`
	Used     Dimensions        `json:"used" msgpack:"used"`
	// Epoch is the log index of the last registration change.
	Epoch     uint64    `json:"epoch" msgpack:"epoch"`
	Telemetry Telemetry `json:"telemetry" msgpack:"telemetry"`
	// Reservations counts the host's active reservations.
	Reservations int64 `json:"reservations" msgpack:"reservations"`
	UpdatedAtMs  int64 `json:"updated_at_ms" msgpack:"updated_at_ms"`
}

// Telemetry is a host's last report. DiskReservedMiB is the disk that
// reservations took since that report (the report cannot show it yet).
type Telemetry struct {
	ReportSeq       uint64 `json:"report_seq" msgpack:"report_seq"`
	DiskFreeMiB     int64  `json:"disk_free_mib" msgpack:"disk_free_mib"`
	ReportedAtMs    int64  `json:"reported_at_ms" msgpack:"reported_at_ms"`
	DiskReservedMiB int64  `json:"disk_reserved_mib" msgpack:"disk_reserved_mib"`
}

// HostResult is a host after a registration or a report. Created says
// a registration added the host (false for a change of one, and for a
// report).
type HostResult struct {
	Host    Host `json:"host" msgpack:"host"`
	Created bool `json:"created" msgpack:"created"`
}

// ReserveRequest reserves host resources for a claimed item, fenced by
// the claim's exact attempt and fence. HostID, if set, names the host;
// otherwise the eligible host with the most free weighted capacity
// (ties: the lowest host_id).
type ReserveRequest struct {
	TenantRef  string `json:"tenant_ref"`
	WorkItemID string `json:"work_item_id"`
	Attempt    int64  `json:"attempt"`
	Fence      uint64 `json:"fence"`
	HostID     string `json:"host_id,omitempty"`
}

// ReleaseRequest frees a reservation, fenced by the claim's exact
// attempt and fence.
type ReleaseRequest struct {
	TenantRef     string `json:"tenant_ref"`
	WorkItemID    string `json:"work_item_id"`
	Attempt       int64  `json:"attempt"`
	Fence         uint64 `json:"fence"`
	ReservationID string `json:"reservation_id"`
}

// Keys are what a reservation holds besides capacity: its repository
// (exclusively or shared), its branch identity (likewise; "" for none),
// its concurrency key and the limit it asserted, its anti-affinity keys
// on the host and its fairness group.
type Keys struct {
	Repository          string   `json:"repository" msgpack:"repository"`
	RepositoryExclusive bool     `json:"repository_exclusive" msgpack:"repository_exclusive"`
	Branch              string   `json:"branch,omitempty" msgpack:"branch"`
	BranchExclusive     bool     `json:"branch_exclusive" msgpack:"branch_exclusive"`
	Concurrency         string   `json:"concurrency" msgpack:"concurrency"`
	ConcurrencyLimit    int64    `json:"concurrency_limit" msgpack:"concurrency_limit"`
	AntiAffinity        []string `json:"anti_affinity" msgpack:"anti_affinity"`
	FairnessGroup       string   `json:"fairness_group" msgpack:"fairness_group"`
}

// Reservation is a reservation as the FSM holds it (the row it stores).
// An ended one stays readable for ReservationRetention.
type Reservation struct {
	ReservationID string `json:"reservation_id" msgpack:"reservation_id"`
	TenantRef     string `json:"tenant_ref" msgpack:"tenant_ref"`
	WorkItemID    string `json:"work_item_id" msgpack:"work_item_id"`
	Attempt       int64  `json:"attempt" msgpack:"attempt"`
	Fence         uint64 `json:"fence" msgpack:"fence"`
	// HeldBy is the principal whose claim the reservation belongs to
	// (the claimer, also when a controller reserved for it): the one
	// that may release it, or hear it again once it ended. Empty for a
	// reservation made before reserve version 2.
	HeldBy         string     `json:"held_by,omitempty" msgpack:"held_by,omitempty"`
	HostID         string     `json:"host_id" msgpack:"host_id"`
	Dimensions     Dimensions `json:"dimensions" msgpack:"dimensions"`
	Keys           Keys       `json:"keys" msgpack:"keys"`
	ProfileName    string     `json:"profile_name" msgpack:"profile_name"`
	ProfileVersion string     `json:"profile_version" msgpack:"profile_version"`
	Fingerprint    string     `json:"fingerprint" msgpack:"fingerprint"`
	FairnessCost   int64      `json:"fairness_cost" msgpack:"fairness_cost"`
	// FairnessDebtAfter is the group's debt once this reservation was
	// charged (rounded up to whole cost units).
	FairnessDebtAfter int64  `json:"fairness_debt_after" msgpack:"fairness_debt_after"`
	Status            string `json:"status" msgpack:"status"`
	EndReason         string `json:"end_reason,omitempty" msgpack:"end_reason"`
	CreatedAtMs       int64  `json:"created_at_ms" msgpack:"created_at_ms"`
	// ExpiresAtMs is the claim's expiry: the reservation ends with it.
	ExpiresAtMs int64 `json:"expires_at_ms" msgpack:"expires_at_ms"`
	EndedAtMs   int64 `json:"ended_at_ms,omitempty" msgpack:"ended_at_ms"`
	// Index is the log index of the reserve command (its id's number).
	Index uint64 `json:"index" msgpack:"index"`
}

// ReservationResult is a reservation: the answer of reserve and release.
type ReservationResult struct {
	Reservation Reservation `json:"reservation" msgpack:"reservation"`
}

// ReclaimRequest ends reservations whose claim is over (expired, not yet
// requeued by Tick): of one tenant (members) or of all (controllers of
// every tenant), optionally of one host, at most MaxCount (1..128).
// Cursor continues a reclaim that stopped early.
type ReclaimRequest struct {
	TenantRef string `json:"tenant_ref,omitempty"`
	HostID    string `json:"host_id,omitempty"`
	MaxCount  int    `json:"max_count"`
	Cursor    string `json:"cursor,omitempty"`
}

// ReclaimResult lists what a reclaim ended; NextCursor is set when it
// stopped before looking at every due reservation.
type ReclaimResult struct {
	ReclaimedIDs []string `json:"reclaimed_reservation_ids" msgpack:"reclaimed_reservation_ids"`
	NextCursor   string   `json:"next_cursor,omitempty" msgpack:"next_cursor"`
	NowMs        int64    `json:"now_ms" msgpack:"now_ms"`
}

// QueryRequest reads the native status: the tenant's reservations
// (optionally of one item or one host), the hosts (or the one named),
// and the tenant's fairness debts, in that order, MaxCount rows a page
// (1..128) across the three lists. It answers whatever the profiles'
// modes.
type QueryRequest struct {
	TenantRef  string `json:"tenant_ref"`
	WorkItemID string `json:"work_item_id,omitempty"`
	HostID     string `json:"host_id,omitempty"`
	MaxCount   int    `json:"max_count"`
	Cursor     string `json:"cursor,omitempty"`
}

// HostStatus is a host in a query: capacity, use, what is free, and the
// age of its telemetry (-1: never reported).
type HostStatus struct {
	Host
	Free           Dimensions `json:"free" msgpack:"free"`
	TelemetryAgeMs int64      `json:"telemetry_age_ms" msgpack:"telemetry_age_ms"`
}

// HostsRequest lists the shared hosts (QueryHosts) in host_id order,
// Limit a page (1..MaxQueryPage; 0: MaxQueryPage), after the cursor
// After (a page's NextCursor; "" for the first). Hosts are every
// tenant's: any reader of TenantRef reads them all, as a query's hosts
// section does.
type HostsRequest struct {
	TenantRef string `json:"tenant_ref"`
	After     string `json:"after,omitempty"`
	Limit     int    `json:"limit,omitempty"`
}

// HostPage is one page of hosts; NextCursor is "" on the last.
type HostPage struct {
	Hosts      []HostStatus `json:"hosts" msgpack:"hosts"`
	NextCursor string       `json:"next_cursor" msgpack:"next_cursor"`
	NowMs      int64        `json:"now_ms" msgpack:"now_ms"`
}

// Debt is a fairness group's debt at the query's FSM time: DebtMilli in
// thousandths of a cost unit, Debt rounded up.
type Debt struct {
	Profile     string `json:"profile" msgpack:"profile"`
	Group       string `json:"group" msgpack:"group"`
	Debt        int64  `json:"debt" msgpack:"debt"`
	DebtMilli   int64  `json:"debt_milli" msgpack:"debt_milli"`
	DecayPerS   int64  `json:"decay_per_s" msgpack:"decay_per_s"`
	UpdatedAtMs int64  `json:"updated_at_ms" msgpack:"updated_at_ms"`
	PaidOffAtMs int64  `json:"paid_off_at_ms" msgpack:"paid_off_at_ms"`
}

// QueryResult is one page.
type QueryResult struct {
	Reservations []Reservation `json:"reservations" msgpack:"reservations"`
	Hosts        []HostStatus  `json:"hosts" msgpack:"hosts"`
	Fairness     []Debt        `json:"fairness" msgpack:"fairness"`
	NextCursor   string        `json:"next_cursor,omitempty" msgpack:"next_cursor"`
	NowMs        int64         `json:"now_ms" msgpack:"now_ms"`
}

// RewriteExtensionRequest sets metadata.resource_reservation of an item
// that has none (or an unreadable one): an admin's governed migration,
// only with the item's exact current fence (0 for an item never
// claimed).
type RewriteExtensionRequest struct {
	TenantRef  string          `json:"tenant_ref"`
	WorkItemID string          `json:"work_item_id"`
	Fence      uint64          `json:"fence"`
	Extension  json.RawMessage `json:"extension"`
}
