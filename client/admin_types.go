package client

// JoinRequest is the JSON form of cluster.JoinRequest: the member to add
// (ID, its raft and API addresses). Replace replaces a member gone for
// good; the other flags are what nodes themselves send.
type JoinRequest struct {
	ID            string       `json:"id"`
	RaftAddr      string       `json:"raft_addr"`
	APIAddr       string       `json:"api_addr"`
	Serves        Capabilities `json:"serves"`
	Replace       bool         `json:"replace,omitempty"`
	ChangeAddress bool         `json:"change_address,omitempty"`
	Fresh         bool         `json:"fresh,omitempty"`
	Refresh       bool         `json:"refresh,omitempty"`
}

// JoinResult is POST /v1/cluster/join's answer.
type JoinResult struct {
	Joined bool `json:"joined"`
}

// RemoveRequest is the JSON form of cluster.RemoveRequest.
type RemoveRequest struct {
	ID string `json:"id"`
}

// RemoveResult is POST /v1/cluster/remove's answer.
type RemoveResult struct {
	Removed bool `json:"removed"`
}

// TransferRequest is the JSON form of cluster.TransferRequest.
type TransferRequest struct {
	To string `json:"to,omitempty"`
}

// TransferResult is the JSON form of cluster.TransferResult: the leader
// after the transfer.
type TransferResult struct {
	LeaderID string `json:"leader_id"`
}

// StateHash is GET /v1/cluster/state-hash's answer (cluster.StateHash
// and each non-empty table's own hash): replicas at the same index hold
// the same state when their Hash is the same; Data is what a restored
// backup's data hash is compared with.
type StateHash struct {
	Index   uint64            `json:"index"`
	Hash    string            `json:"hash"`
	Content string            `json:"content_hash"`
	Data    string            `json:"data_hash"`
	Tables  map[string]string `json:"tables"`
}

// RestoreResult is the JSON form of cluster.RestoreResult.
type RestoreResult struct {
	Backup    SnapshotInfo `json:"backup"`
	Index     uint64       `json:"index"`
	BumpIndex uint64       `json:"bump_index,omitempty"`
}

// SnapshotInfo is the JSON form of fsm.SnapshotInfo: a backup as it was
// read.
type SnapshotInfo struct {
	Format    int         `json:"format"`
	Index     uint64      `json:"index"`
	FSMTimeMs int64       `json:"fsm_time_ms"`
	Bytes     int64       `json:"bytes"`
	Rows      uint64      `json:"rows"`
	Tables    []TableRows `json:"tables"`
	StateHash string      `json:"state_hash"`
	DataHash  string      `json:"data_hash,omitempty"`
}

// TableRows is the JSON form of fsm.TableRows.
type TableRows struct {
	Name string `json:"name"`
	Rows uint64 `json:"rows"`
}
