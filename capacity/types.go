package capacity

import "github.com/arbiterhq/arbiter/errs"

// SchemaVersion is the only DTO schema this package speaks. A request of
// the Go API that leaves SchemaVersion empty speaks it; over HTTP a body
// says schema_version "1" (it is not compiled against this package).
const SchemaVersion = "1"

// Decision is the outcome of a capacity command: granted, or the code of
// the denial (see errs.Decision).
type Decision = errs.Decision

// The decisions a capacity command returns.
const (
	Granted      = errs.Granted
	Exhausted    = Decision(errs.CodeExhausted)
	StaleEpoch   = Decision(errs.CodeStaleEpoch)
	StaleFence   = Decision(errs.CodeStaleFence)
	Expired      = Decision(errs.CodeExpired)
	Invalid      = Decision(errs.CodeInvalid)
	Backpressure = Decision(errs.CodeBackpressure)
)

// Lease states.
const (
	LeaseActive   = "active"
	LeaseReleased = "released"
	LeaseExpired  = "expired"
)

// Demand asks for an amount of one resource class of one cell.
type Demand struct {
	CellID        string `json:"cell_id" msgpack:"cell_id"`
	ResourceClass string `json:"resource_class" msgpack:"resource_class"`
	Amount        uint64 `json:"amount" msgpack:"amount"`
	// ExpectedEpoch, if set, requires the cell to be at this epoch.
	ExpectedEpoch *uint64 `json:"expected_epoch,omitempty" msgpack:"expected_epoch,omitempty"`
}

// AcquireRequest is AcquireCapacity's request DTO.
type AcquireRequest struct {
	SchemaVersion  string   `json:"schema_version"`
	TenantRef      string   `json:"tenant_ref"`
	GraphRef       string   `json:"graph_ref,omitempty"` // "" or DefaultGraph: the default graph
	WorkItemID     string   `json:"work_item_id"`
	OwnerDigest    string   `json:"owner_digest"`
	IdempotencyKey string   `json:"idempotency_key"`
	Priority       int32    `json:"priority"`
	Demands        []Demand `json:"demands"`
	// LeaseID names the lease of a single-demand acquire; otherwise the
	// FSM names leases.
	LeaseID string `json:"lease_id,omitempty"`
	TTLMs   int64  `json:"ttl_ms"`
	// NowMs is accepted for compatibility and ignored: the FSM's clock is
	// the only authority on time.
	NowMs            int64  `json:"now_ms,omitempty"`
	CostBudgetMicros *int64 `json:"cost_budget_micros,omitempty"`
	TokenBudget      *int64 `json:"token_budget,omitempty"`
}

// Lease is one granted demand.
type Lease struct {
	LeaseID          string `json:"lease_id" msgpack:"lease_id"`
	TenantRef        string `json:"tenant_ref" msgpack:"tenant_ref"`
	GraphRef         string `json:"graph_ref,omitempty" msgpack:"graph_ref,omitempty"` // "": the default graph
	CellID           string `json:"cell_id" msgpack:"cell_id"`
	ResourceClass    string `json:"resource_class" msgpack:"resource_class"`
	Amount           uint64 `json:"amount" msgpack:"amount"`
	OwnerDigest      string `json:"owner_digest" msgpack:"owner_digest"`
	WorkItemID       string `json:"work_item_id" msgpack:"work_item_id"`
	Priority         int32  `json:"priority" msgpack:"priority"`
	LeaseEpoch       uint64 `json:"lease_epoch" msgpack:"lease_epoch"`
	Fence            uint64 `json:"fence_token" msgpack:"fence_token"`
	CellEpoch        uint64 `json:"cell_epoch" msgpack:"cell_epoch"`
	State            string `json:"state" msgpack:"state"`
	AcquiredAtMs     int64  `json:"acquired_at_ms" msgpack:"acquired_at_ms"`
	ExpiresAtMs      int64  `json:"expires_at_ms" msgpack:"expires_at_ms"`
	EndedAtMs        int64  `json:"ended_at_ms,omitempty" msgpack:"ended_at_ms"`
	Renewals         uint32 `json:"renewals" msgpack:"renewals"`
	TTLMs            int64  `json:"ttl_ms" msgpack:"ttl_ms"`
	CostBudgetMicros *int64 `json:"cost_budget_micros,omitempty" msgpack:"cost_budget_micros,omitempty"`
	TokenBudget      *int64 `json:"token_budget,omitempty" msgpack:"token_budget,omitempty"`
}

// Available is one cell class's state as a decision saw it.
type Available struct {
	CellID        string `json:"cell_id" msgpack:"cell_id"`
	ResourceClass string `json:"resource_class" msgpack:"resource_class"`
	Capacity      uint64 `json:"capacity" msgpack:"capacity"`
	Used          uint64 `json:"used" msgpack:"used"`
	Free          uint64 `json:"free" msgpack:"free"`
	Epoch         uint64 `json:"epoch" msgpack:"epoch"`
}

// AcquireResult is AcquireCapacity's result DTO.
type AcquireResult struct {
	SchemaVersion string      `json:"schema_version" msgpack:"schema_version"`
	Decision      Decision    `json:"decision" msgpack:"decision"`
	Leases        []Lease     `json:"leases" msgpack:"leases"`
	Available     []Available `json:"available" msgpack:"available"`
	Message       string      `json:"message" msgpack:"message"`
	NowMs         int64       `json:"now_ms" msgpack:"now_ms"`
	Replayed      bool        `json:"replayed,omitempty" msgpack:"-"`
}

// Refs are the tokens of the granted leases, in order: what a renew or
// release presents.
func (r *AcquireResult) Refs() []LeaseRef { return refs(r.Leases) }

// LeaseRef names a lease the caller holds.
type LeaseRef struct {
	LeaseID    string `json:"lease_id" msgpack:"lease_id"`
	LeaseEpoch uint64 `json:"lease_epoch" msgpack:"lease_epoch"`
	Fence      uint64 `json:"fence_token" msgpack:"fence_token"`
}

// Ref is the token that names the lease to renew and release: its id,
// epoch and fence as they are now.
func (l Lease) Ref() LeaseRef {
	return LeaseRef{LeaseID: l.LeaseID, LeaseEpoch: l.LeaseEpoch, Fence: l.Fence}
}

func refs(leases []Lease) []LeaseRef {
	out := make([]LeaseRef, len(leases))
	for i, l := range leases {
		out[i] = l.Ref()
	}
	return out
}

// LeasesRequest is the request DTO of RenewCapacity and ReleaseCapacity.
type LeasesRequest struct {
	SchemaVersion  string     `json:"schema_version"`
	TenantRef      string     `json:"tenant_ref"`
	GraphRef       string     `json:"graph_ref,omitempty"`
	OwnerDigest    string     `json:"owner_digest"`
	Leases         []LeaseRef `json:"leases"`
	NowMs          int64      `json:"now_ms,omitempty"` // ignored, as in AcquireRequest
	TTLMs          int64      `json:"ttl_ms,omitempty"` // renewal TTL (0: each lease's own)
	IdempotencyKey string     `json:"idempotency_key,omitempty"`
}

// LeasesResult is the result DTO of renew and release: the leases after
// the command, or the decision that refused the whole batch.
type LeasesResult struct {
	SchemaVersion string   `json:"schema_version" msgpack:"schema_version"`
	Decision      Decision `json:"decision" msgpack:"decision"`
	Leases        []Lease  `json:"leases" msgpack:"leases"`
	Message       string   `json:"message" msgpack:"message"`
	NowMs         int64    `json:"now_ms" msgpack:"now_ms"`
	Replayed      bool     `json:"replayed,omitempty" msgpack:"-"`
}

// Refs are the tokens of the leases after the command, in request order:
// a renewal advanced each epoch, and these are what the next renew or
// release presents.
func (r *LeasesResult) Refs() []LeaseRef { return refs(r.Leases) }

// ReclaimRequest is ReclaimExpiredCapacity's request DTO.
type ReclaimRequest struct {
	SchemaVersion string `json:"schema_version"`
	TenantRef     string `json:"tenant_ref"`
	GraphRef      string `json:"graph_ref,omitempty"`
	CellID        string `json:"cell_id,omitempty"`
	MaxCount      int    `json:"max_count"`
	NowMs         int64  `json:"now_ms,omitempty"`
	Cursor        string `json:"cursor,omitempty"`
}

// ReclaimResult lists what one reclaim expired.
type ReclaimResult struct {
	SchemaVersion     string   `json:"schema_version" msgpack:"schema_version"`
	Decision          Decision `json:"decision" msgpack:"decision"`
	ReclaimedLeaseIDs []string `json:"reclaimed_lease_ids" msgpack:"reclaimed_lease_ids"`
	NextCursor        string   `json:"next_cursor" msgpack:"next_cursor"`
	NowMs             int64    `json:"now_ms" msgpack:"now_ms"`
}

// ReadRequest is the request DTO of ReconcileCapacity and CapacityStatus.
type ReadRequest struct {
	SchemaVersion string `json:"schema_version"`
	TenantRef     string `json:"tenant_ref"`
	GraphRef      string `json:"graph_ref,omitempty"`
	CellID        string `json:"cell_id,omitempty"`
	LeaseID       string `json:"lease_id,omitempty"`
	MaxCount      int    `json:"max_count"`
	Cursor        string `json:"cursor,omitempty"`
}

// CellStatus is a cell as the FSM holds it.
type CellStatus struct {
	TenantRef   string      `json:"tenant_ref" msgpack:"tenant_ref"`
	GraphRef    string      `json:"graph_ref,omitempty" msgpack:"graph_ref,omitempty"` // "": the default graph
	CellID      string      `json:"cell_id" msgpack:"cell_id"`
	Epoch       uint64      `json:"epoch" msgpack:"epoch"`
	LastFence   uint64      `json:"last_fence" msgpack:"last_fence"`
	Classes     []Available `json:"classes" msgpack:"classes"`
	UpdatedAtMs int64       `json:"updated_at_ms" msgpack:"updated_at_ms"`
}

// ReadResult is one page of cells and leases.
type ReadResult struct {
	SchemaVersion string       `json:"schema_version" msgpack:"schema_version"`
	Cells         []CellStatus `json:"cells" msgpack:"cells"`
	Leases        []Lease      `json:"leases" msgpack:"leases"`
	NextCursor    string       `json:"next_cursor" msgpack:"next_cursor"`
	NowMs         int64        `json:"now_ms" msgpack:"now_ms"`
}

// CellSpec is the desired capacity of a cell, per resource class. A class
// left out has capacity 0 (it may be left out only when unused).
type CellSpec struct {
	CellID     string            `json:"cell_id" msgpack:"cell_id"`
	Capacities map[string]uint64 `json:"capacities" msgpack:"capacities"`
}

// UpdateCellRequest is UpdateCapacityCell's request DTO (controllers only).
type UpdateCellRequest struct {
	SchemaVersion string   `json:"schema_version"`
	TenantRef     string   `json:"tenant_ref"`
	GraphRef      string   `json:"graph_ref,omitempty"`
	Cell          CellSpec `json:"cell"`
	ExpectedEpoch *uint64  `json:"expected_epoch,omitempty"`
	NowMs         int64    `json:"now_ms,omitempty"`
}

// UpdateCellResult is the cell after the update, or why not.
type UpdateCellResult struct {
	SchemaVersion string     `json:"schema_version" msgpack:"schema_version"`
	Decision      Decision   `json:"decision" msgpack:"decision"`
	Cell          CellStatus `json:"cell" msgpack:"cell"`
	Message       string     `json:"message" msgpack:"message"`
	NowMs         int64      `json:"now_ms" msgpack:"now_ms"`
}
