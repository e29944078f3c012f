package workitem

import "encoding/json"

// Work item statuses. In flight = pending + claimed.
const (
	StatusPending   = "pending"
	StatusClaimed   = "claimed"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// The reasons the engine gives when it ends an item itself (a cancel
// names its own; an item a worker completed has none).
const (
	ReasonDependencyFailed  = "dependency_failed"
	ReasonAttemptsExhausted = "attempts_exhausted"
	ReasonDeadlineExceeded  = "deadline_exceeded"
)

// SubmitRequest is SubmitWorkItem: one item admitted into (tenant_ref,
// graph_ref). The verified principal stands for the request context's
// agent, audience, policy and scopes; a body never names them.
type SubmitRequest struct {
	TenantRef string `json:"tenant_ref"`
	// GraphRef is a namespace inside the tenant ("default" when empty).
	GraphRef string `json:"graph_ref,omitempty"`
	// WorkItemID, when empty, is assigned by the FSM ("wi-<log index>-<n>").
	WorkItemID     string `json:"work_item_id,omitempty"`
	IdempotencyKey string `json:"idempotency_key"`
	// CommandDigest is "sha256:" + 64 lowercase hex digits, computed by
	// the caller; the engine checks its form and keeps it.
	CommandDigest string   `json:"command_digest"`
	Kind          string   `json:"kind"`
	Priority      int64    `json:"priority"`
	DependsOn     []string `json:"depends_on"`
	// InputRef is the payload or a reference to it, up to 1 MiB.
	InputRef      string `json:"input_ref"`
	PolicyDigest  string `json:"policy_digest"`
	CatalogDigest string `json:"catalog_digest"`
	ModelDigest   string `json:"model_digest"`
	MaxAttempts   int64  `json:"max_attempts"`
	// DeadlineUnix (seconds), if set, ends the item failed
	// (deadline_exceeded) when FSM time reaches it before a claim does.
	DeadlineUnix *int64 `json:"deadline_unix,omitempty"`
	// Metadata is a JSON object (absent or null: {}), kept in canonical
	// form, up to 64 KiB.
	Metadata          json.RawMessage `json:"metadata,omitempty"`
	ProvenanceRefs    []string        `json:"provenance_refs"`
	MaxTenantInFlight int64           `json:"max_tenant_in_flight"`
}

// Dependencies counts an item's dependencies and those that succeeded.
type Dependencies struct {
	Total     int64 `json:"total" msgpack:"total"`
	Satisfied int64 `json:"satisfied" msgpack:"satisfied"`
}

// Quota is the tenant's in-flight count after an admission, and the cap
// the request named.
type Quota struct {
	InFlight int64 `json:"in_flight" msgpack:"in_flight"`
	Cap      int64 `json:"cap" msgpack:"cap"`
}

// SubmitResult is what an admission committed.
type SubmitResult struct {
	WorkItemID      string       `json:"work_item_id" msgpack:"work_item_id"`
	TenantRef       string       `json:"tenant_ref" msgpack:"tenant_ref"`
	GraphRef        string       `json:"graph_ref" msgpack:"graph_ref"`
	Status          string       `json:"status" msgpack:"status"`
	Created         bool         `json:"created" msgpack:"created"`
	Replayed        bool         `json:"replayed" msgpack:"-"`
	CommandSequence uint64       `json:"command_sequence" msgpack:"command_sequence"`
	IdempotencyKey  string       `json:"idempotency_key" msgpack:"idempotency_key"`
	Dependencies    Dependencies `json:"dependencies" msgpack:"dependencies"`
	Quota           Quota        `json:"quota" msgpack:"quota"`
	// OutboxID is the change-feed sequence of the admission's outbox event.
	OutboxID       uint64   `json:"outbox_id" msgpack:"outbox_id"`
	CommandDigest  string   `json:"command_digest" msgpack:"command_digest"`
	ProvenanceRefs []string `json:"provenance_refs" msgpack:"provenance_refs"`
	ChangedIDs     []string `json:"changed_ids" msgpack:"changed_ids"`
}

// BatchRequest is SubmitWorkItems: 1 to 128 items admitted together or
// not at all. A child may leave tenant_ref and graph_ref empty (it
// inherits the parent's) and may depend on earlier children. A child's
// own idempotency_key is optional and only echoed: the parent's key
// decides replays.
type BatchRequest struct {
	TenantRef      string          `json:"tenant_ref"`
	GraphRef       string          `json:"graph_ref,omitempty"`
	IdempotencyKey string          `json:"idempotency_key"`
	Requests       []SubmitRequest `json:"requests"`
}

// SequenceRange is the command sequences a batch took, first to last.
type SequenceRange struct {
	First uint64 `json:"first" msgpack:"first"`
	Last  uint64 `json:"last" msgpack:"last"`
}

// BatchResult is what a batch committed: one result per child, in
// request order.
type BatchResult struct {
	TenantRef          string         `json:"tenant_ref" msgpack:"tenant_ref"`
	GraphRef           string         `json:"graph_ref" msgpack:"graph_ref"`
	IdempotencyKey     string         `json:"idempotency_key" msgpack:"idempotency_key"`
	Created            bool           `json:"created" msgpack:"created"`
	Replayed           bool           `json:"replayed" msgpack:"-"`
	Results            []SubmitResult `json:"results" msgpack:"results"`
	BatchSequenceRange SequenceRange  `json:"batch_sequence_range" msgpack:"batch_sequence_range"`
}

// WorkItem is an item as the FSM holds it (and the row it stores).
type WorkItem struct {
	TenantRef       string       `json:"tenant_ref" msgpack:"tenant_ref"`
	GraphRef        string       `json:"graph_ref" msgpack:"graph_ref"`
	WorkItemID      string       `json:"work_item_id" msgpack:"work_item_id"`
	CommandSequence uint64       `json:"command_sequence" msgpack:"command_sequence"`
	Kind            string       `json:"kind" msgpack:"kind"`
	Priority        int64        `json:"priority" msgpack:"priority"`
	Status          string       `json:"status" msgpack:"status"`
	DependsOn       []string     `json:"depends_on" msgpack:"depends_on"`
	Dependencies    Dependencies `json:"dependencies" msgpack:"dependencies"`
	InputRef        string       `json:"input_ref" msgpack:"input_ref"`
	CommandDigest   string       `json:"command_digest" msgpack:"command_digest"`
	PolicyDigest    string       `json:"policy_digest" msgpack:"policy_digest"`
	CatalogDigest   string       `json:"catalog_digest" msgpack:"catalog_digest"`
	ModelDigest     string       `json:"model_digest" msgpack:"model_digest"`
	MaxAttempts     int64        `json:"max_attempts" msgpack:"max_attempts"`
	// Attempt counts claims so far; Fence is the last claim's fence.
	Attempt        int64           `json:"attempt" msgpack:"attempt"`
	Fence          uint64          `json:"fence" msgpack:"fence"`
	DeadlineUnix   *int64          `json:"deadline_unix,omitempty" msgpack:"deadline_unix"`
	Metadata       json.RawMessage `json:"metadata" msgpack:"metadata"`
	ProvenanceRefs []string        `json:"provenance_refs" msgpack:"provenance_refs"`
	IdempotencyKey string          `json:"idempotency_key" msgpack:"idempotency_key"`
	// SubmittedBy and ClaimedBy are verified principal ids ("" for the
	// embedding host); OwnerRef is the claimer's own label for itself.
	SubmittedBy      string `json:"submitted_by" msgpack:"submitted_by"`
	OwnerRef         string `json:"owner_ref,omitempty" msgpack:"owner_ref"`
	ClaimedBy        string `json:"claimed_by,omitempty" msgpack:"claimed_by"`
	ClaimExpiresAtMs int64  `json:"claim_expires_at_ms,omitempty" msgpack:"claim_expires_at_ms"`
	ResultRef        string `json:"result_ref,omitempty" msgpack:"result_ref"`
	Reason           string `json:"reason,omitempty" msgpack:"reason"`
	CreatedAtMs      int64  `json:"created_at_ms" msgpack:"created_at_ms"`
	UpdatedAtMs      int64  `json:"updated_at_ms" msgpack:"updated_at_ms"`
	EndedAtMs        int64  `json:"ended_at_ms,omitempty" msgpack:"ended_at_ms"`
	// AdmittedIndex is the log index of the command that admitted it;
	// OutboxID the change-feed sequence of its admission event.
	AdmittedIndex uint64 `json:"admitted_index" msgpack:"admitted_index"`
	OutboxID      uint64 `json:"outbox_id" msgpack:"outbox_id"`
}

// ClaimRequest claims the best claimable item of (tenant_ref, graph_ref):
// the highest priority, then the lowest command sequence, optionally of
// the given kinds or the one item named. An item is claimable when it is
// pending, every dependency has succeeded and its deadline (if any) has
// not passed.
type ClaimRequest struct {
	TenantRef  string   `json:"tenant_ref"`
	GraphRef   string   `json:"graph_ref,omitempty"`
	OwnerRef   string   `json:"owner_ref"`
	Kinds      []string `json:"kinds,omitempty"`
	WorkItemID string   `json:"work_item_id,omitempty"`
	TTLMs      int64    `json:"ttl_ms"`
	// IdempotencyKey, if set, makes a retry of a claim whose outcome was
	// unknown return the same claim instead of taking a second item.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// ClaimResult is a claim: the item (claimed), the attempt it is and the
// fence that completing it takes.
type ClaimResult struct {
	WorkItem    WorkItem `json:"work_item" msgpack:"work_item"`
	Attempt     int64    `json:"attempt" msgpack:"attempt"`
	Fence       uint64   `json:"fence" msgpack:"fence"`
	ExpiresAtMs int64    `json:"expires_at_ms" msgpack:"expires_at_ms"`
	Replayed    bool     `json:"replayed,omitempty" msgpack:"-"`
}

// CompleteRequest ends a claimed item with the claim's exact attempt and
// fence.
type CompleteRequest struct {
	TenantRef  string `json:"tenant_ref"`
	WorkItemID string `json:"work_item_id"`
	Attempt    int64  `json:"attempt"`
	Fence      uint64 `json:"fence"`
	// Outcome is succeeded or failed.
	Outcome   string `json:"outcome"`
	ResultRef string `json:"result_ref,omitempty"`
}

// CancelRequest cancels a pending or claimed item.
type CancelRequest struct {
	TenantRef  string `json:"tenant_ref"`
	WorkItemID string `json:"work_item_id"`
	Reason     string `json:"reason"`
}

// ItemResult is one item: the answer of complete, cancel and get.
type ItemResult struct {
	WorkItem WorkItem `json:"work_item" msgpack:"work_item"`
}

// GetRequest names one item.
type GetRequest struct {
	TenantRef  string `json:"tenant_ref"`
	WorkItemID string `json:"work_item_id"`
}

// ListRequest pages a graph's items in command-sequence order, of one
// status or all. After is the NextCursor of the previous page.
type ListRequest struct {
	TenantRef string `json:"tenant_ref"`
	GraphRef  string `json:"graph_ref,omitempty"`
	Status    string `json:"status,omitempty"`
	After     string `json:"after,omitempty"`
	// Limit is 1..128 (0: 128).
	Limit int `json:"limit,omitempty"`
}

// Summary is an item without its large fields (input, metadata,
// dependency and provenance lists), as a list shows it.
type Summary struct {
	WorkItemID       string       `json:"work_item_id" msgpack:"work_item_id"`
	GraphRef         string       `json:"graph_ref" msgpack:"graph_ref"`
	CommandSequence  uint64       `json:"command_sequence" msgpack:"command_sequence"`
	Kind             string       `json:"kind" msgpack:"kind"`
	Priority         int64        `json:"priority" msgpack:"priority"`
	Status           string       `json:"status" msgpack:"status"`
	Dependencies     Dependencies `json:"dependencies" msgpack:"dependencies"`
	Attempt          int64        `json:"attempt" msgpack:"attempt"`
	MaxAttempts      int64        `json:"max_attempts" msgpack:"max_attempts"`
	Fence            uint64       `json:"fence" msgpack:"fence"`
	OwnerRef         string       `json:"owner_ref,omitempty" msgpack:"owner_ref"`
	ClaimExpiresAtMs int64        `json:"claim_expires_at_ms,omitempty" msgpack:"claim_expires_at_ms"`
	Reason           string       `json:"reason,omitempty" msgpack:"reason"`
	CreatedAtMs      int64        `json:"created_at_ms" msgpack:"created_at_ms"`
	UpdatedAtMs      int64        `json:"updated_at_ms" msgpack:"updated_at_ms"`
	EndedAtMs        int64        `json:"ended_at_ms,omitempty" msgpack:"ended_at_ms"`
}

// ListResult is one page.
type ListResult struct {
	WorkItems  []Summary `json:"work_items" msgpack:"work_items"`
	NextCursor string    `json:"next_cursor" msgpack:"next_cursor"`
	NowMs      int64     `json:"now_ms" msgpack:"now_ms"`
}
