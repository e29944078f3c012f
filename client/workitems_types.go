package client

import (
	"encoding/json"
)

// SubmitRequest is the JSON form of workitem.SubmitRequest.
type SubmitRequest struct {
	TenantRef         string          `json:"tenant_ref"`
	GraphRef          string          `json:"graph_ref,omitempty"`
	WorkItemID        string          `json:"work_item_id,omitempty"`
	IdempotencyKey    string          `json:"idempotency_key"`
	CommandDigest     string          `json:"command_digest"`
	Kind              string          `json:"kind"`
	Priority          int64           `json:"priority"`
	DependsOn         []string        `json:"depends_on"`
	InputRef          string          `json:"input_ref"`
	PolicyDigest      string          `json:"policy_digest"`
	CatalogDigest     string          `json:"catalog_digest"`
	ModelDigest       string          `json:"model_digest"`
	MaxAttempts       int64           `json:"max_attempts"`
	DeadlineUnix      *int64          `json:"deadline_unix,omitempty"`
	Metadata          json.RawMessage `json:"metadata,omitempty"`
	ProvenanceRefs    []string        `json:"provenance_refs"`
	MaxTenantInFlight int64           `json:"max_tenant_in_flight"`
}

// BatchRequest is the JSON form of workitem.BatchRequest.
type BatchRequest struct {
	TenantRef      string          `json:"tenant_ref"`
	GraphRef       string          `json:"graph_ref,omitempty"`
	IdempotencyKey string          `json:"idempotency_key"`
	Requests       []SubmitRequest `json:"requests"`
}

// ClaimRequest is the JSON form of workitem.ClaimRequest.
type ClaimRequest struct {
	TenantRef      string   `json:"tenant_ref"`
	GraphRef       string   `json:"graph_ref,omitempty"`
	OwnerRef       string   `json:"owner_ref"`
	Kinds          []string `json:"kinds,omitempty"`
	WorkItemID     string   `json:"work_item_id,omitempty"`
	TTLMs          int64    `json:"ttl_ms"`
	IdempotencyKey string   `json:"idempotency_key,omitempty"`
}

// CompleteRequest is the JSON form of workitem.CompleteRequest.
type CompleteRequest struct {
	TenantRef  string `json:"tenant_ref"`
	WorkItemID string `json:"work_item_id"`
	Attempt    int64  `json:"attempt"`
	Fence      uint64 `json:"fence"`
	Outcome    string `json:"outcome"`
	ResultRef  string `json:"result_ref,omitempty"`
}

// CancelRequest is the JSON form of workitem.CancelRequest.
type CancelRequest struct {
	TenantRef  string `json:"tenant_ref"`
	WorkItemID string `json:"work_item_id"`
	Reason     string `json:"reason"`
}

// SubmitResult is the JSON form of workitem.SubmitResult.
type SubmitResult struct {
	WorkItemID      string       `json:"work_item_id"`
	TenantRef       string       `json:"tenant_ref"`
	GraphRef        string       `json:"graph_ref"`
	Status          string       `json:"status"`
	Created         bool         `json:"created"`
	Replayed        bool         `json:"replayed"`
	CommandSequence uint64       `json:"command_sequence"`
	IdempotencyKey  string       `json:"idempotency_key"`
	Dependencies    Dependencies `json:"dependencies"`
	Quota           Quota        `json:"quota"`
	OutboxID        uint64       `json:"outbox_id"`
	CommandDigest   string       `json:"command_digest"`
	ProvenanceRefs  []string     `json:"provenance_refs"`
	ChangedIDs      []string     `json:"changed_ids"`
}

// BatchResult is the JSON form of workitem.BatchResult.
type BatchResult struct {
	TenantRef          string         `json:"tenant_ref"`
	GraphRef           string         `json:"graph_ref"`
	IdempotencyKey     string         `json:"idempotency_key"`
	Created            bool           `json:"created"`
	Replayed           bool           `json:"replayed"`
	Results            []SubmitResult `json:"results"`
	BatchSequenceRange SequenceRange  `json:"batch_sequence_range"`
}

// ClaimResult is the JSON form of workitem.ClaimResult.
type ClaimResult struct {
	WorkItem    WorkItem `json:"work_item"`
	Attempt     int64    `json:"attempt"`
	Fence       uint64   `json:"fence"`
	ExpiresAtMs int64    `json:"expires_at_ms"`
	Replayed    bool     `json:"replayed,omitempty"`
}

// ItemResult is the JSON form of workitem.ItemResult.
type ItemResult struct {
	WorkItem WorkItem `json:"work_item"`
}

// WorkItemPage is the JSON form of workitem.ListResult.
type WorkItemPage struct {
	WorkItems  []Summary `json:"work_items"`
	NextCursor string    `json:"next_cursor"`
	NowMs      int64     `json:"now_ms"`
}

// Dependencies is the JSON form of workitem.Dependencies.
type Dependencies struct {
	Total     int64 `json:"total"`
	Satisfied int64 `json:"satisfied"`
}

// Quota is the JSON form of workitem.Quota.
type Quota struct {
	InFlight int64 `json:"in_flight"`
	Cap      int64 `json:"cap"`
}

// SequenceRange is the JSON form of workitem.SequenceRange.
type SequenceRange struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
}

// WorkItem is the JSON form of workitem.WorkItem.
type WorkItem struct {
	TenantRef        string          `json:"tenant_ref"`
	GraphRef         string          `json:"graph_ref"`
	WorkItemID       string          `json:"work_item_id"`
	CommandSequence  uint64          `json:"command_sequence"`
	Kind             string          `json:"kind"`
	Priority         int64           `json:"priority"`
	Status           string          `json:"status"`
	DependsOn        []string        `json:"depends_on"`
	Dependencies     Dependencies    `json:"dependencies"`
	InputRef         string          `json:"input_ref"`
	CommandDigest    string          `json:"command_digest"`
	PolicyDigest     string          `json:"policy_digest"`
	CatalogDigest    string          `json:"catalog_digest"`
	ModelDigest      string          `json:"model_digest"`
	MaxAttempts      int64           `json:"max_attempts"`
	Attempt          int64           `json:"attempt"`
	Fence            uint64          `json:"fence"`
	DeadlineUnix     *int64          `json:"deadline_unix,omitempty"`
	Metadata         json.RawMessage `json:"metadata"`
	ProvenanceRefs   []string        `json:"provenance_refs"`
	IdempotencyKey   string          `json:"idempotency_key"`
	SubmittedBy      string          `json:"submitted_by"`
	OwnerRef         string          `json:"owner_ref,omitempty"`
	ClaimedBy        string          `json:"claimed_by,omitempty"`
	ClaimExpiresAtMs int64           `json:"claim_expires_at_ms,omitempty"`
	ResultRef        string          `json:"result_ref,omitempty"`
	Reason           string          `json:"reason,omitempty"`
	CreatedAtMs      int64           `json:"created_at_ms"`
	UpdatedAtMs      int64           `json:"updated_at_ms"`
	EndedAtMs        int64           `json:"ended_at_ms,omitempty"`
	AdmittedIndex    uint64          `json:"admitted_index"`
	OutboxID         uint64          `json:"outbox_id"`
}

// Summary is the JSON form of workitem.Summary.
type Summary struct {
	WorkItemID       string       `json:"work_item_id"`
	GraphRef         string       `json:"graph_ref"`
	CommandSequence  uint64       `json:"command_sequence"`
	Kind             string       `json:"kind"`
	Priority         int64        `json:"priority"`
	Status           string       `json:"status"`
	Dependencies     Dependencies `json:"dependencies"`
	Attempt          int64        `json:"attempt"`
	MaxAttempts      int64        `json:"max_attempts"`
	Fence            uint64       `json:"fence"`
	OwnerRef         string       `json:"owner_ref,omitempty"`
	ClaimExpiresAtMs int64        `json:"claim_expires_at_ms,omitempty"`
	Reason           string       `json:"reason,omitempty"`
	CreatedAtMs      int64        `json:"created_at_ms"`
	UpdatedAtMs      int64        `json:"updated_at_ms"`
	EndedAtMs        int64        `json:"ended_at_ms,omitempty"`
}
