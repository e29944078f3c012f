package cluster

import (
	"context"
	"net/http"
	"time"

	"github.com/hashicorp/raft"
)

// Learners before voters (etcd's learners, Consul's autopilot): a member
// joins as a non-voter, and the leader promotes it once it has caught up.
// The leader asks each non-voter for its status every promoteInterval:
// it is caught up when it follows this leader, is not halted, serves
// everything the cluster has enabled, and has applied at least what the
// leader had applied when it asked the time before (what the leader had
// applied a moment ago is on its way to the non-voter still). A new
// member thus votes within a second or so of catching up. A non-voter that never starts, or never catches up, is
// never promoted and never counts toward quorum; an admin removes it.

// learnerStatusTimeout bounds the status request to one non-voter.
const learnerStatusTimeout = 2 * time.Second

// maxPromoteInterval bounds how often the leader asks the non-voters
// (TickInterval, if shorter).
const maxPromoteInterval = 250 * time.Millisecond

// promoteLoop promotes caught-up non-voters while ctx (this node's
// leadership) lasts.
func (mb *membership) promoteLoop(ctx context.Context) {
	t := time.NewTicker(min(mb.cfg.TickInterval, maxPromoteInterval))
	defer t.Stop()
	targets := map[raft.ServerID]uint64{}
	for {
		select {
		case <-t.C:
			mb.promoteLearners(ctx, targets)
		case <-ctx.Done():
			return
		}
	}
}

// promoteLearners promotes every non-voter that has caught up. This node
// must be the leader. targets holds, per non-voter, what the leader had
// applied when it asked the last time.
func (mb *membership) promoteLearners(ctx context.Context, targets map[raft.ServerID]uint64) {
	servers, err := mb.servers()
	if err != nil {
		return
	}
	meta := mb.metadata()
	enabled, gated := mb.fsm.Enabled()
	learners := map[raft.ServerID]bool{}
	for _, s := range servers {
		if s.Suffrage == raft.Voter || ctx.Err() != nil {
			continue
		}
		learners[s.ID] = true
		m := meta[string(s.ID)]
		if m.APIAddr == "" || len(m.Serves.Domains) == 0 {
			continue // not registered yet: it has not started
		}
		if gated && len(m.Serves.Missing(enabled)) > 0 {
			continue // it would halt on the log; it stays a non-voter
		}
		prev, asked := targets[s.ID]
		targets[s.ID] = mb.fsm.AppliedIndex()
		st, err := mb.learnerStatus(ctx, m.APIAddr)
		if err != nil {
			mb.logger.Debug("non-voter not reachable", "id", s.ID, "error", err)
			continue
		}
		if !asked || st.NodeID != string(s.ID) || st.LeaderID != mb.cfg.ID || st.Halted != nil || st.AppliedIndex < prev {
			mb.logger.Debug("non-voter not caught up yet", "id", s.ID, "applied", st.AppliedIndex, "leader_applied", prev, "sees_leader", st.LeaderID)
			continue
		}
		if mb.promote(ctx, s) {
			delete(targets, s.ID)
		}
	}
	for id := range targets {
		if !learners[id] {
			delete(targets, id)
		}
	}
}

// promote makes learner a voter, unless it changed since it was asked
// (every membership change on the leader holds memberMu).
func (mb *membership) promote(ctx context.Context, learner raft.Server) bool {
	mb.memberMu.Lock()
	defer mb.memberMu.Unlock()
	servers, err := mb.servers()
	if err != nil {
		return false
	}
	for _, s := range servers {
		if s.ID != learner.ID {
			continue
		}
		if s.Address != learner.Address || s.Suffrage == raft.Voter {
			return false
		}
		if err := waitFuture(ctx, mb.raft.AddVoter(s.ID, s.Address, 0, mb.cfg.ApplyTimeout)); err != nil {
			mb.logger.Warn("promoting a caught-up non-voter failed", "id", s.ID, "error", err)
			return false
		}
		mb.logger.Info("promoted a caught-up non-voter to voter", "id", s.ID, "raft_addr", s.Address)
		return true
	}
	return false
}

// learnerStatus asks the node at api for its status.
func (mb *membership) learnerStatus(ctx context.Context, api string) (*Status, error) {
	ctx, cancel := context.WithTimeout(ctx, learnerStatusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, mb.url(api, "/v1/cluster/status"), nil)
	if err != nil {
		return nil, err
	}
	var st Status
	if err := doJSON(mb.peers, req, &st); err != nil {
		return nil, err
	}
	return &st, nil
}
