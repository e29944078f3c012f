package client

// ReserveRequest is the JSON form of authority.ReserveRequest.
type ReserveRequest struct {
	ConceptID      string   `json:"concept_id"`
	TenantRef      string   `json:"tenant_ref"`
	RepositoryRef  string   `json:"repository_ref,omitempty"`
	LaneRef        string   `json:"lane_ref,omitempty"`
	OwnerRef       string   `json:"owner_ref"`
	RequestRef     string   `json:"request_ref"`
	DesignRef      string   `json:"design_ref,omitempty"`
	ProvenanceRefs []string `json:"provenance_refs,omitempty"`
	PurposeDigest  string   `json:"purpose_digest"`
	TTLMs          int64    `json:"ttl_ms,omitempty"`
	RangeMin       *uint64  `json:"range_min,omitempty"`
	RangeMax       *uint64  `json:"range_max,omitempty"`
}

// ReserveNextRequest is the JSON form of authority.ReserveNextRequest.
type ReserveNextRequest struct {
	Namespace string         `json:"namespace"`
	Prefix    string         `json:"prefix,omitempty"`
	From      uint64         `json:"from"`
	To        uint64         `json:"to"`
	Request   ReserveRequest `json:"request"`
}

// TransitionRequest is the JSON form of authority.TransitionRequest.
type TransitionRequest struct {
	ConceptID     string `json:"concept_id"`
	TenantRef     string `json:"tenant_ref"`
	OwnerRef      string `json:"owner_ref"`
	ReservationID string `json:"reservation_id"`
	Fingerprint   string `json:"fingerprint"`
	ExpectedFence uint64 `json:"expected_fence"`
	Action        string `json:"action"`
}

// ConceptRecord is the JSON form of authority.Record.
type ConceptRecord struct {
	Schema           string   `json:"schema"`
	ConceptID        string   `json:"concept_id"`
	Namespace        string   `json:"namespace"`
	Prefix           string   `json:"prefix,omitempty"`
	Number           uint64   `json:"number"`
	PolicyVersion    string   `json:"policy_version"`
	RangeMin         uint64   `json:"range_min"`
	RangeMax         uint64   `json:"range_max"`
	TenantRef        string   `json:"tenant_ref"`
	RepositoryRef    string   `json:"repository_ref"`
	LaneRef          string   `json:"lane_ref"`
	OwnerRef         string   `json:"owner_ref"`
	RequestRef       string   `json:"request_ref"`
	DesignRef        string   `json:"design_ref"`
	ProvenanceRefs   []string `json:"provenance_refs"`
	PurposeDigest    string   `json:"purpose_digest"`
	Fingerprint      string   `json:"fingerprint"`
	ReservationID    string   `json:"reservation_id"`
	State            string   `json:"state"`
	Fence            uint64   `json:"fence"`
	Visibility       string   `json:"visibility"`
	PrevFence        uint64   `json:"prev_fence,omitempty"`
	CreatedAtMs      int64    `json:"created_at_ms"`
	ExpiresAtMs      int64    `json:"expires_at_ms"`
	ReservedAtMs     int64    `json:"reserved_at_ms"`
	MaterializedAtMs int64    `json:"materialized_at_ms,omitempty"`
	LandedAtMs       int64    `json:"landed_at_ms,omitempty"`
	TombstonedAtMs   int64    `json:"tombstoned_at_ms,omitempty"`
	ReleasedAtMs     int64    `json:"released_at_ms,omitempty"`
	ExpiredAtMs      int64    `json:"expired_at_ms,omitempty"`
	UpdatedAtMs      int64    `json:"updated_at_ms"`
}

// ConceptPage is the JSON form of authority.RecordPage.
type ConceptPage struct {
	Records    []*ConceptRecord `json:"records"`
	NextCursor string           `json:"next_cursor"`
}

// Policies is the JSON form of authority.PoliciesResult.
type Policies struct {
	Configured bool                     `json:"configured"`
	Version    uint64                   `json:"version"`
	Policies   []ConceptNamespacePolicy `json:"policies"`
	Digest     string                   `json:"digest"`
	Source     string                   `json:"source,omitempty"`
	SetAtMs    int64                    `json:"set_at_ms,omitempty"`
	Changed    bool                     `json:"changed"`
}

// PoliciesRequest is the JSON form of authority.PoliciesRequest.
type PoliciesRequest struct {
	Version  uint64                   `json:"version,omitempty"`
	Policies []ConceptNamespacePolicy `json:"policies"`
}

// ReserveResult is the JSON form of authority.ReserveResult.
type ReserveResult struct {
	Record    *ConceptRecord `json:"record"`
	Created   bool           `json:"created"`
	Reclaimed bool           `json:"reclaimed"`
	Replayed  bool           `json:"replayed"`
}

// TransitionResult is the JSON form of authority.TransitionResult.
type TransitionResult struct {
	Record     *ConceptRecord `json:"record"`
	Replayed   bool           `json:"replayed"`
	PromotedTo string         `json:"promoted_to,omitempty"`
}

// ConceptNamespacePolicy is the JSON form of authority.ConceptNamespacePolicy.
type ConceptNamespacePolicy struct {
	Namespace     string `json:"namespace"`
	Prefix        string `json:"prefix,omitempty"`
	Min           uint64 `json:"min"`
	Max           uint64 `json:"max"`
	PolicyVersion string `json:"policy_version"`
}
