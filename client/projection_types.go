package client

import (
	"encoding/json"
)

// ConfigRequest is the JSON form of projection.ConfigRequest.
type ConfigRequest struct {
	LeaseTTLMs int64 `json:"lease_ttl_ms"`
}

// ProjectionConfig is the JSON form of projection.Config.
type ProjectionConfig struct {
	LeaseTTLMs  int64 `json:"lease_ttl_ms"`
	Configured  bool  `json:"configured"`
	UpdatedAtMs int64 `json:"updated_at_ms,omitempty"`
	Changed     bool  `json:"changed,omitempty"`
}

// TargetRequest is the JSON form of projection.TargetRequest.
type TargetRequest struct {
	Attested Attested         `json:"attested"`
	Channels []ChannelBinding `json:"channels"`
	AgentID  string           `json:"agent_id,omitempty"`
}

// TargetResult is the JSON form of projection.TargetResult.
type TargetResult struct {
	TargetID string `json:"target_id"`
	Created  bool   `json:"created"`
}

// TargetView is the JSON form of projection.TargetView.
type TargetView struct {
	TargetID        string         `json:"target_id"`
	AgentID         string         `json:"agent_id"`
	Attested        Attested       `json:"attested"`
	CreatedAtMs     int64          `json:"created_at_ms"`
	Channels        []ChannelView  `json:"channels"`
	Lease           *LeaseView     `json:"lease"`
	LastPublication *PublishResult `json:"last_publication"`
	NowMs           int64          `json:"now_ms"`
}

// ChannelSubmitRequest is the JSON form of projection.SubmitRequest.
type ChannelSubmitRequest struct {
	TargetID        string          `json:"target_id"`
	Channel         string          `json:"channel"`
	SourceWatermark uint64          `json:"source_watermark"`
	Envelope        json.RawMessage `json:"envelope"`
}

// ChannelSubmitResult is the JSON form of projection.SubmitResult.
type ChannelSubmitResult struct {
	Status          string `json:"status"`
	TargetID        string `json:"target_id"`
	Channel         string `json:"channel"`
	SourceWatermark uint64 `json:"source_watermark"`
}

// ProjectionAcquireRequest is the JSON form of projection.AcquireRequest.
type ProjectionAcquireRequest struct {
	TargetID             string `json:"target_id"`
	HolderInstanceDigest string `json:"holder_instance_digest"`
}

// ProjectionLease is the JSON form of projection.Lease.
type ProjectionLease struct {
	TargetID     string `json:"target_id"`
	FencingEpoch uint64 `json:"fencing_epoch"`
	Token        string `json:"token"`
	ExpiresAtMs  int64  `json:"expires_at_ms"`
}

// FenceRequest is the JSON form of projection.FenceRequest.
type FenceRequest struct {
	TargetID     string `json:"target_id"`
	Token        string `json:"token"`
	FencingEpoch uint64 `json:"fencing_epoch"`
}

// PublishResult is the JSON form of projection.PublishResult.
type PublishResult struct {
	TargetID       string `json:"target_id"`
	PublicationSeq uint64 `json:"publication_seq"`
	FencingEpoch   uint64 `json:"fencing_epoch"`
	PublishedAtMs  int64  `json:"published_at_ms"`
	Bytes          int64  `json:"bytes"`
	SHA256         string `json:"sha256"`
	Replayed       bool   `json:"replayed,omitempty"`
	File           string `json:"file,omitempty"`
	FileError      string `json:"file_error,omitempty"`
}

// ProjectionReleaseResult is the JSON form of projection.ReleaseResult.
type ProjectionReleaseResult struct {
	TargetID     string `json:"target_id"`
	FencingEpoch uint64 `json:"fencing_epoch"`
	State        string `json:"state"`
	Released     bool   `json:"released"`
}

// Attested is the JSON form of projection.Attested.
type Attested struct {
	SchemaVersion      string `json:"schema_version"`
	Capability         string `json:"capability"`
	HarnessType        string `json:"harness_type"`
	InstanceKeyDigest  string `json:"instance_key_digest"`
	WorkspaceKeyDigest string `json:"workspace_key_digest"`
	ProjectionKind     string `json:"projection_kind"`
}

// ChannelBinding is the JSON form of projection.ChannelBinding.
type ChannelBinding struct {
	Channel  string `json:"channel"`
	Producer string `json:"producer"`
}

// ChannelView is the JSON form of projection.ChannelView.
type ChannelView struct {
	Channel         string `json:"channel"`
	Producer        string `json:"producer"`
	Status          string `json:"status"`
	SourceWatermark uint64 `json:"source_watermark,omitempty"`
	CapturedAtMs    int64  `json:"captured_at_ms,omitempty"`
	ExpiresAtMs     int64  `json:"expires_at_ms,omitempty"`
	UpdatedAtMs     int64  `json:"updated_at_ms,omitempty"`
	Conflicts       uint64 `json:"conflicts,omitempty"`
}

// LeaseView is the JSON form of projection.LeaseView.
type LeaseView struct {
	FencingEpoch         uint64 `json:"fencing_epoch"`
	State                string `json:"state"`
	HolderInstanceDigest string `json:"holder_instance_digest"`
	AcquiredAtMs         int64  `json:"acquired_at_ms"`
	ExpiresAtMs          int64  `json:"expires_at_ms"`
	EndedAtMs            int64  `json:"ended_at_ms,omitempty"`
}
