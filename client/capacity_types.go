package client

// AcquireRequest is the JSON form of capacity.AcquireRequest.
type AcquireRequest struct {
	SchemaVersion    string   `json:"schema_version"`
	TenantRef        string   `json:"tenant_ref"`
	GraphRef         string   `json:"graph_ref,omitempty"`
	WorkItemID       string   `json:"work_item_id"`
	OwnerDigest      string   `json:"owner_digest"`
	IdempotencyKey   string   `json:"idempotency_key"`
	Priority         int64    `json:"priority"`
	Demands          []Demand `json:"demands"`
	LeaseID          string   `json:"lease_id,omitempty"`
	TTLMs            int64    `json:"ttl_ms"`
	NowMs            int64    `json:"now_ms,omitempty"`
	CostBudgetMicros *int64   `json:"cost_budget_micros,omitempty"`
	TokenBudget      *int64   `json:"token_budget,omitempty"`
}

// LeasesRequest is the JSON form of capacity.LeasesRequest.
type LeasesRequest struct {
	SchemaVersion  string     `json:"schema_version"`
	TenantRef      string     `json:"tenant_ref"`
	GraphRef       string     `json:"graph_ref,omitempty"`
	OwnerDigest    string     `json:"owner_digest"`
	Leases         []LeaseRef `json:"leases"`
	NowMs          int64      `json:"now_ms,omitempty"`
	TTLMs          int64      `json:"ttl_ms,omitempty"`
	IdempotencyKey string     `json:"idempotency_key,omitempty"`
}

// CapacityReclaimRequest is the JSON form of capacity.ReclaimRequest.
type CapacityReclaimRequest struct {
	SchemaVersion string `json:"schema_version"`
	TenantRef     string `json:"tenant_ref"`
	GraphRef      string `json:"graph_ref,omitempty"`
	CellID        string `json:"cell_id,omitempty"`
	MaxCount      int64  `json:"max_count"`
	NowMs         int64  `json:"now_ms,omitempty"`
	Cursor        string `json:"cursor,omitempty"`
}

// CapacityReadRequest is the JSON form of capacity.ReadRequest.
type CapacityReadRequest struct {
	SchemaVersion string `json:"schema_version"`
	TenantRef     string `json:"tenant_ref"`
	GraphRef      string `json:"graph_ref,omitempty"`
	CellID        string `json:"cell_id,omitempty"`
	LeaseID       string `json:"lease_id,omitempty"`
	MaxCount      int64  `json:"max_count"`
	Cursor        string `json:"cursor,omitempty"`
}

// UpdateCellRequest is the JSON form of capacity.UpdateCellRequest.
type UpdateCellRequest struct {
	SchemaVersion string   `json:"schema_version"`
	TenantRef     string   `json:"tenant_ref"`
	GraphRef      string   `json:"graph_ref,omitempty"`
	Cell          CellSpec `json:"cell"`
	ExpectedEpoch *uint64  `json:"expected_epoch,omitempty"`
	NowMs         int64    `json:"now_ms,omitempty"`
}

// AcquireResult is the JSON form of capacity.AcquireResult.
type AcquireResult struct {
	SchemaVersion string      `json:"schema_version"`
	Decision      string      `json:"decision"`
	Leases        []Lease     `json:"leases"`
	Available     []Available `json:"available"`
	Message       string      `json:"message"`
	NowMs         int64       `json:"now_ms"`
	Replayed      bool        `json:"replayed,omitempty"`
}

// LeasesResult is the JSON form of capacity.LeasesResult.
type LeasesResult struct {
	SchemaVersion string  `json:"schema_version"`
	Decision      string  `json:"decision"`
	Leases        []Lease `json:"leases"`
	Message       string  `json:"message"`
	NowMs         int64   `json:"now_ms"`
	Replayed      bool    `json:"replayed,omitempty"`
}

// CapacityReclaimResult is the JSON form of capacity.ReclaimResult.
type CapacityReclaimResult struct {
	SchemaVersion     string   `json:"schema_version"`
	Decision          string   `json:"decision"`
	ReclaimedLeaseIDs []string `json:"reclaimed_lease_ids"`
	NextCursor        string   `json:"next_cursor"`
	NowMs             int64    `json:"now_ms"`
}

// CellResult is the JSON form of capacity.UpdateCellResult.
type CellResult struct {
	SchemaVersion string     `json:"schema_version"`
	Decision      string     `json:"decision"`
	Cell          CellStatus `json:"cell"`
	Message       string     `json:"message"`
	NowMs         int64      `json:"now_ms"`
}

// CapacityPage is the JSON form of capacity.ReadResult.
type CapacityPage struct {
	SchemaVersion string       `json:"schema_version"`
	Cells         []CellStatus `json:"cells"`
	Leases        []Lease      `json:"leases"`
	NextCursor    string       `json:"next_cursor"`
	NowMs         int64        `json:"now_ms"`
}

// Demand is the JSON form of capacity.Demand.
type Demand struct {
	CellID        string  `json:"cell_id"`
	ResourceClass string  `json:"resource_class"`
	Amount        uint64  `json:"amount"`
	ExpectedEpoch *uint64 `json:"expected_epoch,omitempty"`
}

// LeaseRef is the JSON form of capacity.LeaseRef.
type LeaseRef struct {
	LeaseID    string `json:"lease_id"`
	LeaseEpoch uint64 `json:"lease_epoch"`
	Fence      uint64 `json:"fence_token"`
}

// CellSpec is the JSON form of capacity.CellSpec.
type CellSpec struct {
	CellID     string            `json:"cell_id"`
	Capacities map[string]uint64 `json:"capacities"`
}

// Lease is the JSON form of capacity.Lease.
type Lease struct {
	LeaseID          string `json:"lease_id"`
	TenantRef        string `json:"tenant_ref"`
	GraphRef         string `json:"graph_ref,omitempty"`
	CellID           string `json:"cell_id"`
	ResourceClass    string `json:"resource_class"`
	Amount           uint64 `json:"amount"`
	OwnerDigest      string `json:"owner_digest"`
	WorkItemID       string `json:"work_item_id"`
	Priority         int64  `json:"priority"`
	LeaseEpoch       uint64 `json:"lease_epoch"`
	Fence            uint64 `json:"fence_token"`
	CellEpoch        uint64 `json:"cell_epoch"`
	State            string `json:"state"`
	AcquiredAtMs     int64  `json:"acquired_at_ms"`
	ExpiresAtMs      int64  `json:"expires_at_ms"`
	EndedAtMs        int64  `json:"ended_at_ms,omitempty"`
	Renewals         uint64 `json:"renewals"`
	TTLMs            int64  `json:"ttl_ms"`
	CostBudgetMicros *int64 `json:"cost_budget_micros,omitempty"`
	TokenBudget      *int64 `json:"token_budget,omitempty"`
}

// Available is the JSON form of capacity.Available.
type Available struct {
	CellID        string `json:"cell_id"`
	ResourceClass string `json:"resource_class"`
	Capacity      uint64 `json:"capacity"`
	Used          uint64 `json:"used"`
	Free          uint64 `json:"free"`
	Epoch         uint64 `json:"epoch"`
}

// CellStatus is the JSON form of capacity.CellStatus.
type CellStatus struct {
	TenantRef   string      `json:"tenant_ref"`
	GraphRef    string      `json:"graph_ref,omitempty"`
	CellID      string      `json:"cell_id"`
	Epoch       uint64      `json:"epoch"`
	LastFence   uint64      `json:"last_fence"`
	Classes     []Available `json:"classes"`
	UpdatedAtMs int64       `json:"updated_at_ms"`
}
