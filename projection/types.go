package projection

import (
	"encoding/json"

	"github.com/arbiterhq/arbiter/errs"
)

// The channels a target may admit: the two Wave-1 producer schemas. A
// channel's name is the schema of the envelopes it carries.
const (
	ChannelComputedRoute     = "computed-route.v1"
	ChannelLifecycleFrontier = "lifecycle-frontier.v1"
)

// Channels lists the admissible channels in name order, which is the
// order of a publication's entries.
var Channels = []string{ChannelComputedRoute, ChannelLifecycleFrontier}

// Channel statuses in a publication.
const (
	StatusFresh    = "fresh"    // an envelope whose expiry FSM time has not reached
	StatusExpired  = "expired"  // FSM time reached the envelope's expires_at_ms
	StatusEmpty    = "empty"    // nothing submitted yet
	StatusDegraded = "degraded" // a source conflict at the channel's watermark
)

// Lease states.
const (
	LeaseHeld      = "held"
	LeaseReleased  = "released"
	LeasePublished = "published" // consumed by its one publication
	LeaseExpired   = "expired"   // held, and FSM time reached its expiry (reads only)
)

// Submission outcomes.
const (
	SubmitAccepted = "accepted"
	SubmitReplayed = "replayed"
)

// Attested is the tuple a target is derived from, minus agent_id, which
// is the verified principal's id. No field is a path or a session id.
type Attested struct {
	SchemaVersion      string `json:"schema_version" msgpack:"schema_version"`
	Capability         string `json:"capability" msgpack:"capability"`
	HarnessType        string `json:"harness_type" msgpack:"harness_type"`
	InstanceKeyDigest  string `json:"instance_key_digest" msgpack:"instance_key_digest"`
	WorkspaceKeyDigest string `json:"workspace_key_digest" msgpack:"workspace_key_digest"`
	ProjectionKind     string `json:"projection_kind" msgpack:"projection_kind"`
}

// ChannelBinding admits a channel on a target and binds it to the one
// principal that may submit to it.
type ChannelBinding struct {
	Channel  string `json:"channel" msgpack:"channel"`
	Producer string `json:"producer" msgpack:"producer"`
}

// ConfigRequest sets the replicated configuration (admin only).
type ConfigRequest struct {
	LeaseTTLMs int64 `json:"lease_ttl_ms"`
}

// Config is the replicated configuration; LeaseTTLMs is 0 until an
// admin sets it, and acquire fails until then.
type Config struct {
	LeaseTTLMs  int64 `json:"lease_ttl_ms" msgpack:"lease_ttl_ms"`
	Configured  bool  `json:"configured" msgpack:"configured"`
	UpdatedAtMs int64 `json:"updated_at_ms,omitempty" msgpack:"updated_at_ms"`
	Changed     bool  `json:"changed,omitempty" msgpack:"changed"`
}

// TargetRequest registers (admits) a target. AgentID may be given only
// by a trusted embedding host, which acts for agents; an authenticated
// caller registers its own targets.
type TargetRequest struct {
	Attested Attested         `json:"attested"`
	Channels []ChannelBinding `json:"channels"`
	AgentID  string           `json:"agent_id,omitempty"`
}

// TargetResult names the registered target.
type TargetResult struct {
	TargetID string `json:"target_id" msgpack:"target_id"`
	Created  bool   `json:"created" msgpack:"created"`
}

// SubmitRequest is a producer's submission of one envelope to one
// channel. Envelope is a JSON object (see the package doc's frame).
type SubmitRequest struct {
	TargetID        string          `json:"target_id"`
	Channel         string          `json:"channel"`
	SourceWatermark uint64          `json:"source_watermark"`
	Envelope        json.RawMessage `json:"envelope"`
}

// SubmitResult is accepted (the channel now holds the envelope) or
// replayed (it already held this envelope at this watermark). A source
// conflict is the error conflict with this result in its detail.
type SubmitResult struct {
	Status          string        `json:"status" msgpack:"status"`
	TargetID        string        `json:"target_id" msgpack:"target_id"`
	Channel         string        `json:"channel" msgpack:"channel"`
	SourceWatermark uint64        `json:"source_watermark" msgpack:"source_watermark"`
	Decision        errs.Decision `json:"-" msgpack:"decision"`
	Message         string        `json:"-" msgpack:"message"`
}

// AcquireRequest asks for a target's single-publication lease.
type AcquireRequest struct {
	TargetID             string `json:"target_id"`
	HolderInstanceDigest string `json:"holder_instance_digest"`
}

// Lease is a granted lease. Token is returned once, to the holder, and is
// never stored: only its SHA-256 is.
type Lease struct {
	TargetID     string `json:"target_id" msgpack:"target_id"`
	FencingEpoch uint64 `json:"fencing_epoch" msgpack:"fencing_epoch"`
	Token        string `json:"token" msgpack:"-"`
	ExpiresAtMs  int64  `json:"expires_at_ms" msgpack:"expires_at_ms"`
}

// FenceRequest names the lease a holder holds: publish and release.
type FenceRequest struct {
	TargetID     string `json:"target_id"`
	Token        string `json:"token"`
	FencingEpoch uint64 `json:"fencing_epoch"`
}

// PublishResult describes the publication a publish recorded. Replayed is
// set when the lease had already published it (a retry after an unknown
// outcome).
type PublishResult struct {
	TargetID       string `json:"target_id" msgpack:"target_id"`
	PublicationSeq uint64 `json:"publication_seq" msgpack:"publication_seq"`
	FencingEpoch   uint64 `json:"fencing_epoch" msgpack:"fencing_epoch"`
	PublishedAtMs  int64  `json:"published_at_ms" msgpack:"published_at_ms"`
	Bytes          int    `json:"bytes" msgpack:"bytes"`
	SHA256         string `json:"sha256" msgpack:"sha256"`
	Replayed       bool   `json:"replayed,omitempty" msgpack:"replayed"`
	// File is what the node that served the publish did with its own
	// current.json (FileWritten, FileFailed with FileError, FilePending
	// or FileNone): set by the service of a cluster node (and carried
	// over HTTP), empty from a backend that runs no effects (a bare FSM).
	// It is never part of the replicated result.
	File      string `json:"file,omitempty" msgpack:"-"`
	FileError string `json:"file_error,omitempty" msgpack:"-"`
}

// What the serving node did with its current.json (PublishResult.File).
const (
	// FileWritten: its current.json holds the publication, or a later
	// one.
	FileWritten = "written"
	// FileFailed: the write failed (FileError says why); the old file is
	// whole, and the node retries the write on its own until it succeeds.
	// Holder treats it as a failure.
	FileFailed = "failed"
	// FilePending: the node had not run the write when the answer's
	// wait (5 s, or the request's deadline) ended. Holder treats it as a
	// failure.
	FilePending = "pending"
	// FileNone: the node has no runtime root and writes no files.
	FileNone = "none"
)

// ReleaseResult is the lease after a release. Released is false when the
// lease had already ended (published, released or expired): a release is
// safe to send on every path.
type ReleaseResult struct {
	TargetID     string `json:"target_id" msgpack:"target_id"`
	FencingEpoch uint64 `json:"fencing_epoch" msgpack:"fencing_epoch"`
	State        string `json:"state" msgpack:"state"`
	Released     bool   `json:"released" msgpack:"released"`
}

// TargetView is a target as the FSM holds it: never a token or its hash.
type TargetView struct {
	TargetID        string         `json:"target_id" msgpack:"target_id"`
	AgentID         string         `json:"agent_id" msgpack:"agent_id"`
	Attested        Attested       `json:"attested" msgpack:"attested"`
	CreatedAtMs     int64          `json:"created_at_ms" msgpack:"created_at_ms"`
	Channels        []ChannelView  `json:"channels" msgpack:"channels"`
	Lease           *LeaseView     `json:"lease" msgpack:"lease"`
	LastPublication *PublishResult `json:"last_publication" msgpack:"last_publication"`
	NowMs           int64          `json:"now_ms" msgpack:"now_ms"`
}

// ChannelView is one admitted channel and what it holds.
type ChannelView struct {
	Channel         string `json:"channel" msgpack:"channel"`
	Producer        string `json:"producer" msgpack:"producer"`
	Status          string `json:"status" msgpack:"status"`
	SourceWatermark uint64 `json:"source_watermark,omitempty" msgpack:"source_watermark"`
	CapturedAtMs    int64  `json:"captured_at_ms,omitempty" msgpack:"captured_at_ms"`
	ExpiresAtMs     int64  `json:"expires_at_ms,omitempty" msgpack:"expires_at_ms"`
	UpdatedAtMs     int64  `json:"updated_at_ms,omitempty" msgpack:"updated_at_ms"`
	Conflicts       uint64 `json:"conflicts,omitempty" msgpack:"conflicts"`
}

// LeaseView is the target's last lease without its token hash.
type LeaseView struct {
	FencingEpoch         uint64 `json:"fencing_epoch" msgpack:"fencing_epoch"`
	State                string `json:"state" msgpack:"state"`
	HolderInstanceDigest string `json:"holder_instance_digest" msgpack:"holder_instance_digest"`
	AcquiredAtMs         int64  `json:"acquired_at_ms" msgpack:"acquired_at_ms"`
	ExpiresAtMs          int64  `json:"expires_at_ms" msgpack:"expires_at_ms"`
	EndedAtMs            int64  `json:"ended_at_ms,omitempty" msgpack:"ended_at_ms"`
}
