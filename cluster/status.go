package cluster

import (
	"context"
	"encoding/hex"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/hashicorp/raft"
)

// Status is a node's view of the cluster.
type Status struct {
	NodeID string `json:"node_id"`
	// ClusterID names the cluster (chosen when it was bootstrapped; ""
	// until this node has seen it).
	ClusterID string `json:"cluster_id"`
	// AuthMode is "open" (development: every caller trusted, loopback
	// only) or "principals".
	AuthMode      string         `json:"auth_mode"`
	State         string         `json:"state"`
	LeaderID      string         `json:"leader_id"`
	LeaderAPIAddr string         `json:"leader_api_addr"`
	Term          uint64         `json:"term"`
	CommitIndex   uint64         `json:"commit_index"`
	AppliedIndex  uint64         `json:"applied_index"`
	Members       []MemberStatus `json:"members"`
	// Gated is false until the leader has enabled a command set; Enabled
	// is the set, as this node holds it (see fsm.Capabilities).
	Gated   bool             `json:"gated"`
	Enabled fsm.Capabilities `json:"enabled"`
	// LogStore is this node's raft log store (wal or bolt).
	LogStore string `json:"log_store"`
	// Storage is what this node keeps on disk: its log's last index,
	// its last raft snapshot and the size of its data directory.
	Storage StorageStatus `json:"storage"`
	// Halted says why this node stopped applying, if it did (fsm.Halt).
	Halted *fsm.Halt `json:"halted,omitempty"`
	// Effects counts the effects after commit this node ran and those
	// that failed (a file a domain could not write), with the last
	// failure.
	Effects EffectsStatus `json:"effects"`
}

// StorageStatus is a node's log, last snapshot and data directory.
type StorageStatus struct {
	LastLogIndex      uint64 `json:"last_log_index"`
	LastSnapshotIndex uint64 `json:"last_snapshot_index"`
	LastSnapshotTerm  uint64 `json:"last_snapshot_term"`
	// LastSnapshotBytes is the size of the newest snapshot in the store
	// (taken here or installed from the leader).
	LastSnapshotBytes int64 `json:"last_snapshot_bytes"`
	// DataDirBytes is the size of the files under the data directory
	// (log, stable store, snapshots); 0 for a node on in-memory stores.
	DataDirBytes int64 `json:"data_dir_bytes"`
	// TrailingLogs is how many log entries the node keeps behind its
	// newest snapshot now (Config.TrailingLogs or more: catchup.go), and
	// SnapshotRestores how many snapshots it has restored since it
	// started (its own at start, and installs from the leader).
	TrailingLogs     uint64 `json:"trailing_logs"`
	SnapshotRestores uint64 `json:"snapshot_restores"`
}

// EffectsStatus is a node's record of effects after commit (fsm.Effect):
// how many ran and failed, the last failure, the retries of failed keyed
// effects, and the keyed effects failing now (Failing of them; the list
// holds the first 16 by key), which the node retries on its own.
type EffectsStatus struct {
	Runs        uint64             `json:"runs"`
	Failures    uint64             `json:"failures"`
	LastFailure *fsm.EffectFailure `json:"last_failure,omitempty"`
	Retries     uint64             `json:"retries"`
	Failing     int                `json:"failing"`
	FailingList []fsm.EffectState  `json:"failing_list,omitempty"`
}

// MemberStatus is one member: raft's configuration joined with the
// replicated metadata.
type MemberStatus struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	APIAddr  string `json:"api_addr"`
	// Voter is false for a member that joined and has not caught up yet
	// (the leader promotes it once it has).
	Voter bool `json:"voter"`
	// Serves is what the member's binary serves, as it last registered.
	Serves fsm.Capabilities `json:"serves"`
}

// Status reports this node's view of the cluster.
func (n *Node) Status() Status {
	lid, lapi := n.leaderAPI()
	s := Status{
		NodeID:        n.cfg.ID,
		ClusterID:     n.members.clusterID(),
		AuthMode:      n.AuthMode(),
		State:         n.raft.State().String(),
		LeaderID:      lid,
		LeaderAPIAddr: lapi,
		Term:          n.raft.CurrentTerm(),
		CommitIndex:   n.raft.CommitIndex(),
		AppliedIndex:  n.fsm.AppliedIndex(),
		Members:       []MemberStatus{},
	}
	s.Enabled, s.Gated = n.fsm.Enabled()
	s.Halted = n.fsm.Halted()
	s.LogStore = n.host.logStore
	s.Storage = n.host.storageStatus()
	s.Effects = EffectsStatus{Runs: n.fsm.EffectRuns(), Failures: n.fsm.EffectFailures(), LastFailure: n.fsm.LastEffectFailure(), Retries: n.fsm.EffectRetries()}
	s.Effects.Failing, s.Effects.FailingList = n.fsm.FailingEffectsReport()
	meta := map[string]fsm.Member{}
	for _, m := range n.fsm.Members() {
		meta[m.ID] = m
	}
	if servers, err := n.servers(); err == nil {
		for _, sv := range servers {
			m := meta[string(sv.ID)]
			s.Members = append(s.Members, MemberStatus{
				ID: string(sv.ID), RaftAddr: string(sv.Address), APIAddr: m.APIAddr,
				Voter: sv.Suffrage == raft.Voter, Serves: m.Serves,
			})
		}
	}
	return s
}

// storageStatus reads raft's stats and sums the data directory's files
// (a few: the log store and the snapshots raft retains).
func (h *raftHost) storageStatus() StorageStatus {
	var st StorageStatus
	if h.raft == nil {
		return st
	}
	st.LastLogIndex = h.raft.LastIndex()
	stats := h.raft.Stats()
	st.LastSnapshotIndex, _ = strconv.ParseUint(stats["last_snapshot_index"], 10, 64)
	st.LastSnapshotTerm, _ = strconv.ParseUint(stats["last_snapshot_term"], 10, 64)
	st.LastSnapshotBytes = h.newestSnapshotBytes()
	st.TrailingLogs, st.SnapshotRestores = h.trailingLogsNow(), h.snapshotRestores.Load()
	if h.cfg.DataDir != "" {
		_ = filepath.WalkDir(h.cfg.DataDir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					st.DataDirBytes += info.Size()
				}
			}
			return nil
		})
	}
	return st
}

// StateHash is the FSM's applied index and state hash, for divergence
// checks across replicas, its content hash (every row but the FSM's
// bookkeeping: equal before and after a command that changed nothing),
// and its data hash (the content without the members and the change
// feed: equal to a backup's data_hash right after it was restored, here
// or into another cluster; see fsm.Hashes).
type StateHash struct {
	Index   uint64 `json:"index"`
	Hash    string `json:"hash"`
	Content string `json:"content_hash"`
	Data    string `json:"data_hash"`
}

func stateHash(index uint64, h fsm.Hashes) StateHash {
	return StateHash{Index: index, Hash: hex.EncodeToString(h.State[:]), Content: hex.EncodeToString(h.Content[:]), Data: hex.EncodeToString(h.Data[:])}
}

// stateHashReply is what GET /v1/cluster/state-hash answers: the hashes
// and each non-empty table's own hash, so that where two replicas' hashes
// differ the reply names the table that differs. (StateHash stays
// comparable with ==; the tables are only on the wire.)
type stateHashReply struct {
	StateHash
	Tables map[string]string `json:"tables"`
}

func newStateHashReply(index uint64, h fsm.Hashes) stateHashReply {
	tables := make(map[string]string, len(h.Tables))
	for name, sum := range h.Tables {
		tables[name] = hex.EncodeToString(sum[:])
	}
	return stateHashReply{StateHash: stateHash(index, h), Tables: tables}
}

// StateHashAt waits until this node has applied index and hashes its
// state as of exactly that index; ok is false if that state was never
// visible on its own (see fsm.FSM.StateHashAt).
func (n *Node) StateHashAt(ctx context.Context, index uint64) (h StateHash, ok bool, err error) {
	sums, ok, err := n.fsm.StateHashesAt(ctx, index)
	return stateHash(index, sums), ok, err
}

// ContentHash hashes what the applied commands wrote, without the applied
// index and the clock (see fsm.FSM.ContentHash): equal before and after a
// refused request proves the request changed nothing.
func (n *Node) ContentHash() (string, error) {
	sum, err := n.fsm.ContentHash()
	return hex.EncodeToString(sum[:]), err
}

// StateHash hashes the local state (O(state); for tests and tooling).
func (n *Node) StateHash() (StateHash, error) {
	idx, sums, err := n.fsm.StateHashes()
	return stateHash(idx, sums), err
}
