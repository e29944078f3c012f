package client

import (
	"encoding/json"
	"time"
)

// Status is the JSON form of cluster.Status.
type Status struct {
	NodeID        string         `json:"node_id"`
	ClusterID     string         `json:"cluster_id"`
	AuthMode      string         `json:"auth_mode"`
	State         string         `json:"state"`
	LeaderID      string         `json:"leader_id"`
	LeaderAPIAddr string         `json:"leader_api_addr"`
	Term          uint64         `json:"term"`
	CommitIndex   uint64         `json:"commit_index"`
	AppliedIndex  uint64         `json:"applied_index"`
	Members       []MemberStatus `json:"members"`
	Gated         bool           `json:"gated"`
	Enabled       Capabilities   `json:"enabled"`
	LogStore      string         `json:"log_store"`
	Storage       StorageStatus  `json:"storage"`
	Halted        *Halt          `json:"halted,omitempty"`
	Effects       EffectsStatus  `json:"effects"`
}

// Whoami is the JSON form of cluster.Whoami.
type Whoami struct {
	AuthMode    string   `json:"auth_mode"`
	Credential  string   `json:"credential"`
	Principal   string   `json:"principal"`
	Tenants     []string `json:"tenants"`
	Roles       []string `json:"roles"`
	OwnerDigest string   `json:"owner_digest"`
	Trusted     bool     `json:"trusted"`
}

// ChangesPage is the JSON form of fsm.ChangesPage.
type ChangesPage struct {
	Events  []Event `json:"events"`
	Next    uint64  `json:"next"`
	LastSeq uint64  `json:"last_seq"`
}

// CapabilitiesResult is the JSON form of fsm.CapabilitiesView.
type CapabilitiesResult struct {
	Gated   bool         `json:"gated"`
	Enabled Capabilities `json:"enabled"`
	Served  Capabilities `json:"served"`
}

// MemberStatus is the JSON form of cluster.MemberStatus.
type MemberStatus struct {
	ID       string       `json:"id"`
	RaftAddr string       `json:"raft_addr"`
	APIAddr  string       `json:"api_addr"`
	Voter    bool         `json:"voter"`
	Serves   Capabilities `json:"serves"`
}

// Capabilities is the JSON form of fsm.Capabilities.
type Capabilities struct {
	Domains []DomainCaps `json:"domains"`
}

// StorageStatus is the JSON form of cluster.StorageStatus.
type StorageStatus struct {
	LastLogIndex      uint64 `json:"last_log_index"`
	LastSnapshotIndex uint64 `json:"last_snapshot_index"`
	LastSnapshotTerm  uint64 `json:"last_snapshot_term"`
	LastSnapshotBytes int64  `json:"last_snapshot_bytes"`
	DataDirBytes      int64  `json:"data_dir_bytes"`
	TrailingLogs      uint64 `json:"trailing_logs"`
	SnapshotRestores  uint64 `json:"snapshot_restores"`
}

// Halt is the JSON form of fsm.Halt.
type Halt struct {
	Index   uint64 `json:"index"`
	Type    uint64 `json:"type"`
	Version uint64 `json:"version"`
	Domain  string `json:"domain"`
	Command string `json:"command"`
	// Served, when set, is the newest version of that command the halted
	// member's binary serves: it halted at another entry, which the
	// enabled version may change.
	Served uint64 `json:"served,omitempty"`
}

// EffectsStatus is the JSON form of cluster.EffectsStatus.
type EffectsStatus struct {
	Runs        uint64         `json:"runs"`
	Failures    uint64         `json:"failures"`
	LastFailure *EffectFailure `json:"last_failure,omitempty"`
	Retries     uint64         `json:"retries"`
	Failing     int64          `json:"failing"`
	FailingList []EffectState  `json:"failing_list,omitempty"`
}

// Event is the JSON form of fsm.Event.
type Event struct {
	Seq         uint64          `json:"seq"`
	Index       uint64          `json:"index"`
	Time        int64           `json:"time_ms"`
	Kind        string          `json:"kind"`
	Key         string          `json:"key"`
	Tenant      string          `json:"tenant,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"`
	Overwritten bool            `json:"overwritten,omitempty"`
}

// DomainCaps is the JSON form of fsm.DomainCaps.
type DomainCaps struct {
	Name     string       `json:"name"`
	Commands []CommandCap `json:"commands"`
}

// EffectFailure is the JSON form of fsm.EffectFailure.
type EffectFailure struct {
	Effect string    `json:"effect"`
	Error  string    `json:"error"`
	Index  uint64    `json:"index"`
	At     time.Time `json:"at"`
}

// EffectState is the JSON form of fsm.EffectState.
type EffectState struct {
	Effect  string `json:"effect"`
	Key     string `json:"key"`
	Index   uint64 `json:"index"`
	Error   string `json:"error,omitempty"`
	Retries uint64 `json:"retries,omitempty"`
}

// CommandCap is the JSON form of fsm.CommandCap.
type CommandCap struct {
	Type    uint64 `json:"type"`
	Name    string `json:"name"`
	Version uint64 `json:"version"`
}
