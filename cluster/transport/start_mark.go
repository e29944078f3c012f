package transport

import (
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// startMark is what a node must have applied, once since it started,
// before it is ready: the commit index of the first AppendEntries from a
// leader that carries one (raft's heartbeats name the leader but carry
// no commit index, and a restarted node's own commit index is 0 until
// replication reaches it), or, for a node that became leader itself, the
// index it had applied once it committed the first entry of its term
// (its whole log). Recorded once, it is never lowered or raised: after
// that the ordinary check (applied >= commit index) keeps the node
// honest. An AppendEntries of a deposed leader that reaches the node
// first records a commit index that is only older, never one the cluster
// did not commit.
type startMark struct{ v atomic.Uint64 } // the index + 1; 0: not yet

func (m *startMark) record(index uint64) { m.v.CompareAndSwap(0, index+1) }

// get is the recorded index; ok is false until one is.
func (m *startMark) get() (index uint64, ok bool) {
	v := m.v.Load()
	if v == 0 {
		return 0, false
	}
	return v - 1, true
}

// isHeartbeat reports whether req is one of raft's heartbeats: no
// entries, no previous entry, no commit index.
func isHeartbeat(req *raft.AppendEntriesRequest) bool {
	return len(req.Entries) == 0 && req.PrevLogEntry == 0 && req.LeaderCommitIndex == 0
}

// StartIndex is what this node must have applied, once since it started,
// before it is ready; ok is false until a leader has said (startMark).
func (g *Guard) StartIndex() (index uint64, ok bool) { return g.start.get() }

// RecordStart sets what this node must have applied before it is ready,
// unless a leader has said it already: a node that leads from its start
// records its whole log, once applied.
func (g *Guard) RecordStart(index uint64) { g.start.record(index) }
