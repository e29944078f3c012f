package authority

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/canon"
	"github.com/arbiterhq/arbiter/nodes"
)

// State is a lifecycle state.
type State string

const (
	Reserved     State = "reserved"
	Materialized State = "materialized"
	Landed       State = "landed"
	Tombstoned   State = "tombstoned"
	Released     State = "released"
	Expired      State = "expired"
)

// Visibility says how far a concept id has been seen. It never decreases.
type Visibility string

const (
	VisibilityNone       Visibility = "none"
	VisibilityRepository Visibility = "repository"
	VisibilityExternal   Visibility = "external"
)

func (v Visibility) rank() int {
	switch v {
	case VisibilityRepository:
		return 1
	case VisibilityExternal:
		return 2
	}
	return 0
}

// Record is the durable claim on one concept id, stored as the properties
// of its node. Times are FSM time in unix milliseconds.
type Record struct {
	Schema    string `json:"schema"`
	ConceptID string `json:"concept_id"`
	Namespace string `json:"namespace"`
	// Prefix is the id's semantic prefix (absent for none).
	Prefix        string `json:"prefix,omitempty"`
	Number        uint64 `json:"number"`
	PolicyVersion string `json:"policy_version"`
	RangeMin      uint64 `json:"range_min"`
	RangeMax      uint64 `json:"range_max"`

	TenantRef      string   `json:"tenant_ref"`
	RepositoryRef  string   `json:"repository_ref"`
	LaneRef        string   `json:"lane_ref"`
	OwnerRef       string   `json:"owner_ref"`
	RequestRef     string   `json:"request_ref"`
	DesignRef      string   `json:"design_ref"`
	ProvenanceRefs []string `json:"provenance_refs"`

	PurposeDigest string `json:"purpose_digest"`
	Fingerprint   string `json:"fingerprint"`
	ReservationID string `json:"reservation_id"`

	State      State      `json:"state"`
	Fence      uint64     `json:"fence"`
	Visibility Visibility `json:"visibility"`
	// PrevFence is the fence this record's last write replaced (absent on
	// a claim's first record, and on records older releases wrote).
	PrevFence uint64 `json:"prev_fence,omitempty"`

	CreatedAtMs      int64 `json:"created_at_ms"`
	ExpiresAtMs      int64 `json:"expires_at_ms"`
	ReservedAtMs     int64 `json:"reserved_at_ms"`
	MaterializedAtMs int64 `json:"materialized_at_ms,omitempty"`
	LandedAtMs       int64 `json:"landed_at_ms,omitempty"`
	TombstonedAtMs   int64 `json:"tombstoned_at_ms,omitempty"`
	ReleasedAtMs     int64 `json:"released_at_ms,omitempty"`
	ExpiredAtMs      int64 `json:"expired_at_ms,omitempty"`
	UpdatedAtMs      int64 `json:"updated_at_ms"`
}

// Record field names used in conditions, updates and time fields.
const (
	schemaV1         = "concept-reservation/v1"
	fieldState       = "state"
	fieldFence       = "fence"
	fieldVisibility  = "visibility"
	fieldExpiresAt   = "expires_at_ms"
	fieldUpdatedAt   = "updated_at_ms"
	fieldCreatedAt   = "created_at_ms"
	fieldReservedAt  = "reserved_at_ms"
	labelAll         = "concept-reservation"
	tenantLabelStart = "concept-reservation-tenant:"
)

// timestampField is the field that records entering a state.
var timestampField = map[State]string{
	Reserved: fieldReservedAt, Materialized: "materialized_at_ms", Landed: "landed_at_ms",
	Tombstoned: "tombstoned_at_ms", Released: "released_at_ms", Expired: "expired_at_ms",
}

// tenantLabel is the label the tenant-scoped queries page through. The
// tenant ref is hashed so that any opaque ref fits a label.
func tenantLabel(tenant string) string {
	sum := sha256.Sum256([]byte(tenant))
	return tenantLabelStart + hex.EncodeToString(sum[:16])
}

// active reports whether the record holds its concept id.
func (r *Record) active() bool {
	return r.State == Reserved || r.State == Materialized || r.State == Landed || r.State == Tombstoned
}

// properties turns a record into node properties. Zero timestamps are
// left out (absent), since the FSM writes them.
func (r *Record) properties() (map[string]any, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "encode record: %v", err)
	}
	var props map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&props); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "encode record: %v", err)
	}
	for _, f := range []string{fieldCreatedAt, fieldExpiresAt, fieldReservedAt, fieldUpdatedAt} {
		if props[f] == json.Number("0") {
			delete(props, f)
		}
	}
	return props, nil
}

// recordOf reads the record stored in a node.
func recordOf(n *nodes.Record) (*Record, error) {
	raw, err := json.Marshal(n.Properties)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "node %s: %v", n.NodeID, err)
	}
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil || r.Schema != schemaV1 {
		return nil, errs.Errorf(errs.CodeInternal, "node %s does not hold a concept reservation record (%v)", n.NodeID, err)
	}
	return &r, nil
}

// Fingerprints identify what a reservation asks for: the same request
// retried has the same fingerprint; any changed input a different one.
// Version 2 covers every input of the request, ttl_ms included, as the
// SHA-256 of its canonical JSON (RFC 8785); version 1 left ttl_ms out.
// Neither covers range_min and range_max, which are not the caller's to
// decide (the policy replaces them). A stored claim keeps the version it
// was written with, and a retry is compared in that version, so a claim
// of an older release still replays.
const (
	fingerprintV1 = "v1:"
	fingerprintV2 = "v2:"
)

// fingerprint is req's fingerprint in the version the service writes:
// 2 where the cluster binds claims to its policy set (every member runs
// this release or a later one), else 1, which older members compute too.
func fingerprint(id ConceptID, req *ReserveRequest, m mode) string {
	if m.Bound {
		return fingerprintOfV2(id, req)
	}
	return fingerprintOfV1(id, req)
}

// sameFingerprint reports whether req has the stored fingerprint, in
// the stored fingerprint's version.
func sameFingerprint(stored string, id ConceptID, req *ReserveRequest) bool {
	if strings.HasPrefix(stored, fingerprintV1) {
		return stored == fingerprintOfV1(id, req)
	}
	return stored == fingerprintOfV2(id, req)
}

func fingerprintOfV1(id ConceptID, req *ReserveRequest) string {
	body, _ := json.Marshal([]any{
		id.String(), req.TenantRef, req.RepositoryRef, req.LaneRef, req.OwnerRef,
		req.RequestRef, req.DesignRef, req.PurposeDigest, req.ProvenanceRefs,
	})
	sum := sha256.Sum256(body)
	return fingerprintV1 + hex.EncodeToString(sum[:])
}

// fingerprintOfV2 hashes the request after validate (ttl_ms 0 is the
// default TTL; no provenance refs, null or [], is the empty list).
func fingerprintOfV2(id ConceptID, req *ReserveRequest) string {
	refs := req.ProvenanceRefs
	if refs == nil {
		refs = []string{}
	}
	body, err := canon.Value(map[string]any{
		"concept_id": id.String(), "tenant_ref": req.TenantRef, "repository_ref": req.RepositoryRef,
		"lane_ref": req.LaneRef, "owner_ref": req.OwnerRef, "request_ref": req.RequestRef,
		"design_ref": req.DesignRef, "purpose_digest": req.PurposeDigest, "provenance_refs": refs,
		"ttl_ms": req.TTLMs,
	})
	if err != nil {
		// Validated identifiers always encode; never a shared fingerprint.
		body = []byte(err.Error())
	}
	sum := sha256.Sum256(body)
	return fingerprintV2 + hex.EncodeToString(sum[:])
}

// reservationID names one claim: the concept, the request, its fingerprint
// and one more than the fence the claim replaced (1 for a create), so a
// reclaim by the same request is a new reservation. It is not the claim's
// own fence, which is the log index of its write where set_index is
// enabled and is known only once the write has applied.
func reservationID(id ConceptID, requestRef, fp string, fence uint64) string {
	sum := sha256.Sum256([]byte(id.String() + "\x00" + requestRef + "\x00" + fp + "\x00" + strconv.FormatUint(fence, 10)))
	return "rsv-" + hex.EncodeToString(sum[:12])
}

// publicFields are the parts of a record any caller may see in a conflict:
// nothing that names a tenant, owner, request or design.
func (r *Record) publicFields() map[string]any {
	return map[string]any{
		"concept_id": r.ConceptID, "namespace": r.Namespace, "policy_version": r.PolicyVersion,
		"state": string(r.State), "visibility": string(r.Visibility), "fence": r.Fence,
		"created_at_ms": r.CreatedAtMs, "expires_at_ms": r.ExpiresAtMs,
	}
}

func (r *Record) String() string {
	return fmt.Sprintf("%s %s fence %d (%s)", r.ConceptID, r.State, r.Fence, r.ReservationID)
}
