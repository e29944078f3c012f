package client

import (
	"encoding/json"
)

// PutHostRequest is the JSON form of workitem.PutHostRequest.
type PutHostRequest struct {
	HostID        string            `json:"host_id"`
	Labels        map[string]string `json:"labels"`
	Capacity      Dimensions        `json:"capacity"`
	ExpectedEpoch *uint64           `json:"expected_epoch,omitempty"`
}

// TelemetryRequest is the JSON form of workitem.TelemetryRequest.
type TelemetryRequest struct {
	HostID      string `json:"host_id"`
	ReportSeq   uint64 `json:"report_seq"`
	DiskFreeMiB int64  `json:"disk_free_mib"`
}

// ProfilesRequest is the JSON form of workitem.ProfilesRequest.
type ProfilesRequest struct {
	Profiles []Profile `json:"profiles"`
}

// Profiles is the JSON form of workitem.ProfilesResult.
type Profiles struct {
	Profiles    []ProfileStatus `json:"profiles"`
	Digest      string          `json:"digest"`
	Changed     bool            `json:"changed"`
	Source      string          `json:"source,omitempty"`
	FileVersion uint64          `json:"file_version,omitempty"`
	SetIndex    uint64          `json:"set_index,omitempty"`
	Kept        bool            `json:"kept,omitempty"`
}

// HostReserveRequest is the JSON form of workitem.ReserveRequest.
type HostReserveRequest struct {
	TenantRef  string `json:"tenant_ref"`
	WorkItemID string `json:"work_item_id"`
	Attempt    int64  `json:"attempt"`
	Fence      uint64 `json:"fence"`
	HostID     string `json:"host_id,omitempty"`
}

// HostReleaseRequest is the JSON form of workitem.ReleaseRequest.
type HostReleaseRequest struct {
	TenantRef     string `json:"tenant_ref"`
	WorkItemID    string `json:"work_item_id"`
	Attempt       int64  `json:"attempt"`
	Fence         uint64 `json:"fence"`
	ReservationID string `json:"reservation_id"`
}

// HostReclaimRequest is the JSON form of workitem.ReclaimRequest.
type HostReclaimRequest struct {
	TenantRef string `json:"tenant_ref,omitempty"`
	HostID    string `json:"host_id,omitempty"`
	MaxCount  int64  `json:"max_count"`
	Cursor    string `json:"cursor,omitempty"`
}

// ReservationQueryRequest is the JSON form of workitem.QueryRequest.
type ReservationQueryRequest struct {
	TenantRef  string `json:"tenant_ref"`
	WorkItemID string `json:"work_item_id,omitempty"`
	HostID     string `json:"host_id,omitempty"`
	MaxCount   int64  `json:"max_count"`
	Cursor     string `json:"cursor,omitempty"`
}

// ReservationQueryResult is the JSON form of workitem.QueryResult.
type ReservationQueryResult struct {
	Reservations []Reservation `json:"reservations"`
	Hosts        []HostStatus  `json:"hosts"`
	Fairness     []Debt        `json:"fairness"`
	NextCursor   string        `json:"next_cursor,omitempty"`
	NowMs        int64         `json:"now_ms"`
}

// HostPage is the JSON form of workitem.HostPage: one page of hosts in
// host_id order; NextCursor is "" on the last.
type HostPage struct {
	Hosts      []HostStatus `json:"hosts"`
	NextCursor string       `json:"next_cursor"`
	NowMs      int64        `json:"now_ms"`
}

// RewriteExtensionRequest is the JSON form of workitem.RewriteExtensionRequest.
type RewriteExtensionRequest struct {
	TenantRef  string          `json:"tenant_ref"`
	WorkItemID string          `json:"work_item_id"`
	Fence      uint64          `json:"fence"`
	Extension  json.RawMessage `json:"extension"`
}

// HostResult is the JSON form of workitem.HostResult.
type HostResult struct {
	Host    Host `json:"host"`
	Created bool `json:"created"`
}

// ReservationResult is the JSON form of workitem.ReservationResult.
type ReservationResult struct {
	Reservation Reservation `json:"reservation"`
}

// ReservationReclaimResult is the JSON form of workitem.ReclaimResult.
type ReservationReclaimResult struct {
	ReclaimedIDs []string `json:"reclaimed_reservation_ids"`
	NextCursor   string   `json:"next_cursor,omitempty"`
	NowMs        int64    `json:"now_ms"`
}

// Dimensions is the JSON form of extension.Dimensions.
type Dimensions struct {
	CPUMillis int64 `json:"cpu_millis"`
	MemoryMiB int64 `json:"memory_mib"`
	DiskMiB   int64 `json:"disk_mib"`
	Processes int64 `json:"processes"`
}

// Profile is the JSON form of workitem.Profile.
type Profile struct {
	Name              string         `json:"name"`
	Version           string         `json:"version"`
	Weights           Weights        `json:"weights"`
	Max               Dimensions     `json:"max"`
	Fairness          FairnessPolicy `json:"fairness"`
	Disk              DiskPolicy     `json:"disk"`
	TelemetryMaxAgeMs int64          `json:"telemetry_max_age_ms"`
	Mode              string         `json:"mode"`
}

// ProfileStatus is the JSON form of workitem.ProfileStatus.
type ProfileStatus struct {
	Name              string         `json:"name"`
	Version           string         `json:"version"`
	Weights           Weights        `json:"weights"`
	Max               Dimensions     `json:"max"`
	Fairness          FairnessPolicy `json:"fairness"`
	Disk              DiskPolicy     `json:"disk"`
	TelemetryMaxAgeMs int64          `json:"telemetry_max_age_ms"`
	Mode              string         `json:"mode"`
	Complete          bool           `json:"complete"`
	Missing           []string       `json:"missing"`
}

// Reservation is the JSON form of workitem.Reservation.
type Reservation struct {
	ReservationID     string     `json:"reservation_id"`
	TenantRef         string     `json:"tenant_ref"`
	WorkItemID        string     `json:"work_item_id"`
	Attempt           int64      `json:"attempt"`
	Fence             uint64     `json:"fence"`
	HeldBy            string     `json:"held_by,omitempty"`
	HostID            string     `json:"host_id"`
	Dimensions        Dimensions `json:"dimensions"`
	Keys              Keys       `json:"keys"`
	ProfileName       string     `json:"profile_name"`
	ProfileVersion    string     `json:"profile_version"`
	Fingerprint       string     `json:"fingerprint"`
	FairnessCost      int64      `json:"fairness_cost"`
	FairnessDebtAfter int64      `json:"fairness_debt_after"`
	Status            string     `json:"status"`
	EndReason         string     `json:"end_reason,omitempty"`
	CreatedAtMs       int64      `json:"created_at_ms"`
	ExpiresAtMs       int64      `json:"expires_at_ms"`
	EndedAtMs         int64      `json:"ended_at_ms,omitempty"`
	Index             uint64     `json:"index"`
}

// HostStatus is the JSON form of workitem.HostStatus.
type HostStatus struct {
	HostID         string            `json:"host_id"`
	Labels         map[string]string `json:"labels"`
	Capacity       Dimensions        `json:"capacity"`
	Used           Dimensions        `json:"used"`
	Epoch          uint64            `json:"epoch"`
	Telemetry      Telemetry         `json:"telemetry"`
	Reservations   int64             `json:"reservations"`
	UpdatedAtMs    int64             `json:"updated_at_ms"`
	Free           Dimensions        `json:"free"`
	TelemetryAgeMs int64             `json:"telemetry_age_ms"`
}

// Debt is the JSON form of workitem.Debt.
type Debt struct {
	Profile     string `json:"profile"`
	Group       string `json:"group"`
	Debt        int64  `json:"debt"`
	DebtMilli   int64  `json:"debt_milli"`
	DecayPerS   int64  `json:"decay_per_s"`
	UpdatedAtMs int64  `json:"updated_at_ms"`
	PaidOffAtMs int64  `json:"paid_off_at_ms"`
}

// Host is the JSON form of workitem.Host.
type Host struct {
	HostID       string            `json:"host_id"`
	Labels       map[string]string `json:"labels"`
	Capacity     Dimensions        `json:"capacity"`
	Used         Dimensions        `json:"used"`
	Epoch        uint64            `json:"epoch"`
	Telemetry    Telemetry         `json:"telemetry"`
	Reservations int64             `json:"reservations"`
	UpdatedAtMs  int64             `json:"updated_at_ms"`
}

// Weights is the JSON form of workitem.Weights.
type Weights struct {
	CPU     int64 `json:"cpu"`
	Memory  int64 `json:"memory"`
	Disk    int64 `json:"disk"`
	Process int64 `json:"process"`
}

// FairnessPolicy is the JSON form of workitem.FairnessPolicy.
type FairnessPolicy struct {
	MaxDebt   int64 `json:"max_debt"`
	DecayPerS int64 `json:"decay_per_s"`
}

// DiskPolicy is the JSON form of workitem.DiskPolicy.
type DiskPolicy struct {
	MinFreeMiB int64 `json:"min_free_mib"`
}

// Keys is the JSON form of workitem.Keys.
type Keys struct {
	Repository          string   `json:"repository"`
	RepositoryExclusive bool     `json:"repository_exclusive"`
	Branch              string   `json:"branch,omitempty"`
	BranchExclusive     bool     `json:"branch_exclusive"`
	Concurrency         string   `json:"concurrency"`
	ConcurrencyLimit    int64    `json:"concurrency_limit"`
	AntiAffinity        []string `json:"anti_affinity"`
	FairnessGroup       string   `json:"fairness_group"`
}

// Telemetry is the JSON form of workitem.Telemetry.
type Telemetry struct {
	ReportSeq       uint64 `json:"report_seq"`
	DiskFreeMiB     int64  `json:"disk_free_mib"`
	ReportedAtMs    int64  `json:"reported_at_ms"`
	DiskReservedMiB int64  `json:"disk_reserved_mib"`
}
