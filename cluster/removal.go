package cluster

import (
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/hashicorp/raft"
)

// A removed member stops. A follower usually learns of its removal from
// the configuration entry the leader sends it last (raft's leader
// replicates up to the entry that removes a follower before it stops
// replicating to it): it then asks the members it knows of, and stops when
// one that follows a leader of its own cluster no longer lists it. A
// leader that removes itself is shut down by raft (ShutdownOnRemove). A
// member that missed the entry (it was down, or cut off) finds no leader
// any more, and after a while asks the others likewise. A member whose id
// the cluster now knows at another raft address was replaced, and stops
// too. The node logs why, closes, and Done/Err report it (arbiter serve
// exits non-zero). A node that cannot reach any other member keeps
// running: it cannot tell.

const (
	// removalCheckInterval is how often a node looks at its configuration.
	removalCheckInterval = 500 * time.Millisecond
	// leaderlessBeforeAsking is how long a node goes without a leader
	// before it asks other members whether it is still one of them, and
	// askEvery how often it asks again.
	leaderlessBeforeAsking = 3 * time.Second
	askEvery               = 2 * time.Second
)

// watchRemoval stops the node once it finds it was removed or replaced.
// The configuration a node holds may name changes not committed yet (and
// raft does not say which), so a node that finds itself missing from it,
// or named at another address, asks the others, whose leader decides.
func (mb *membership) watchRemoval() {
	var leaderless, asked time.Time
	for {
		if sleepCtx(mb.ctx, removalCheckInterval) != nil {
			return
		}
		if mb.raft.State() == raft.Shutdown {
			mb.exit(errs.Errorf(errs.CodeNotFound, "member %s was removed from its cluster%s: raft shut down", mb.cfg.ID, mb.clusterSuffix()))
			return
		}
		f := mb.raft.GetConfiguration()
		if f.Error() != nil {
			continue
		}
		in, addr := false, raft.ServerAddress("")
		for _, s := range f.Configuration().Servers {
			if string(s.ID) == mb.cfg.ID {
				in, addr = true, s.Address
			}
		}
		suspect := false
		switch {
		case in && (string(addr) == mb.raftAddr || mb.moving.Load()):
			mb.member.Store(true)
		case mb.member.Load():
			suspect = true // removed, or replaced: the others say
		}
		now := time.Now()
		if _, lid := mb.raft.LeaderWithID(); lid != "" || !mb.member.Load() {
			leaderless = time.Time{}
		} else if leaderless.IsZero() {
			leaderless = now
		}
		lost := !leaderless.IsZero() && now.Sub(leaderless) >= leaderlessBeforeAsking
		if !(suspect || lost) || now.Sub(asked) < askEvery {
			continue
		}
		asked = now
		if err := mb.askWhetherMember(); err != nil {
			mb.exit(err)
			return
		}
	}
}

// askWhetherMember asks the members this node knows of for their view of
// the cluster; it returns why this node must stop if one that follows a
// leader of its own cluster no longer lists it, or lists it at another
// raft address.
func (mb *membership) askWhetherMember() error {
	mine := mb.clusterID()
	for _, api := range mb.peerAPIs() {
		st, err := mb.learnerStatus(mb.ctx, api)
		if err != nil || st.LeaderID == "" || st.LeaderID == mb.cfg.ID || st.NodeID == mb.cfg.ID {
			continue
		}
		if mine == "" || st.ClusterID != mine {
			continue // not known to be the same cluster: it cannot tell
		}
		listed := false
		for _, m := range st.Members {
			if m.ID != mb.cfg.ID {
				continue
			}
			listed = true
			if m.RaftAddr != mb.raftAddr && !mb.moving.Load() {
				return errs.Errorf(errs.CodeNotFound, "member %s was replaced in cluster %s: %s (following leader %s) names raft address %s for it, not this node's %s",
					mb.cfg.ID, mine, st.NodeID, st.LeaderID, m.RaftAddr, mb.raftAddr)
			}
		}
		if !listed {
			return errs.Errorf(errs.CodeNotFound, "member %s was removed from cluster %s: %s (following leader %s) no longer lists it",
				mb.cfg.ID, mine, st.NodeID, st.LeaderID)
		}
		return nil
	}
	return nil
}

// clusterID is the cluster's id as this node knows it: replicated, else
// recorded.
func (mb *membership) clusterID() string {
	if id := mb.fsm.ClusterID(); id != "" {
		return id
	}
	return mb.record.Get().ClusterID
}

func (mb *membership) clusterSuffix() string {
	if id := mb.clusterID(); id != "" {
		return " " + id
	}
	return ""
}
