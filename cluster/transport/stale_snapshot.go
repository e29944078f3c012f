package transport

import (
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Stale snapshots. hashicorp/raft (v1.7.3) installs any InstallSnapshot
// of the current term, even one behind what the follower has applied: it
// restores the FSM to the older state, sets its applied index back, and
// the next commit makes it replay from there, reading entries its own
// compaction may have deleted, at which point raft panics ("log not
// found" in processLogs). A snapshot request can arrive late when the
// network holds it (a leader that timed out its call, a retry on another
// connection that overtakes it). The raft paper's rule is that a follower
// keeps what it has beyond a snapshot it receives; raft does not, so the
// guard refuses such a request before raft sees it: an error to a leader
// that is not waiting for it any more. A snapshot at or ahead of the
// applied index goes through.

// filterInbound moves RPCs from in to out until stop closes: it refuses
// every InstallSnapshot whose last index is behind the applied index, and
// holds every AppendEntries to the paper's commit rule (commit_rule.go).
//
// It hands raft one RPC at a time and waits for raft's answer before it
// takes the next. Raft handles its RPCs one at a time anyway, but without
// the wait the filter would read the applied index while raft is still
// handling the AppendEntries before the snapshot, whose commit can move
// the applied index past the snapshot after the check: the fault harness
// over TCP caught exactly that rewind (the leader's AppendEntries and its
// later InstallSnapshot arrive on two connections, back to back).
func (g *Guard) filterInbound(in <-chan raft.RPC, out chan<- raft.RPC) {
	answer := make(chan raft.RPCResponse, 1)
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-g.stop:
			return
		}
		switch req := rpc.Command.(type) {
		case *raft.InstallSnapshotRequest:
			if applied := g.appliedIndex(); req.LastLogIndex < applied {
				g.refuseStale(rpc, req, applied)
				continue
			}
		case *raft.AppendEntriesRequest:
			if !isHeartbeat(req) {
				g.start.record(req.LeaderCommitIndex)
			}
			rpc.Command = commitOnlyWhatItCarries(req)
		}
		asked, reply := rpc, rpc.RespChan
		asked.RespChan = answer
		select {
		case out <- asked:
		case <-g.stop:
			respondError(rpc, errShuttingDown)
			return
		}
		select {
		case resp := <-answer:
			if reply != nil {
				reply <- resp // raft's transports give it room for one answer
			}
		case <-g.stop:
			respondError(rpc, errShuttingDown)
			return
		}
	}
}

func (g *Guard) refuseStale(rpc raft.RPC, req *raft.InstallSnapshotRequest, applied uint64) {
	// The snapshot's bytes follow the request on the same stream; they
	// must be read before the reply, as raft itself does (issue #212).
	if rpc.Reader != nil {
		_, _ = io.Copy(io.Discard, rpc.Reader)
	}
	if l := g.logger.Load(); l != nil {
		l.Warn("refused a stale snapshot: it is behind what this node applied",
			"snapshot_index", req.LastLogIndex, "snapshot_term", req.LastLogTerm, "applied_index", applied)
	}
	respondError(rpc, fmt.Errorf("snapshot at index %d is behind this node's applied index %d", req.LastLogIndex, applied))
}

func (g *Guard) appliedIndex() uint64 {
	if f := g.applied.Load(); f != nil {
		return (*f)()
	}
	return 0
}

// WatchApplied turns the filter on, with the running raft's applied index.
func (g *Guard) WatchApplied(applied func() uint64, logger *slog.Logger) {
	g.logger.Store(logger)
	g.applied.Store(&applied)
}

// staleFilter is what the filter needs: the running raft's applied index
// (nil until Start has raft) and where to log.
type staleFilter struct {
	applied atomic.Pointer[func() uint64]
	logger  atomic.Pointer[slog.Logger]
}
