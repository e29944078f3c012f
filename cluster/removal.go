package cluster

import (
	"context"
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
func (n *Node) watchRemoval() {
	var leaderless, asked time.Time
	for {
		if sleepCtx(n.ctx, removalCheckInterval) != nil {
			return
		}
		if n.raft.State() == raft.Shutdown {
			n.exit(errs.Errorf(errs.CodeNotFound, "member %s was removed from its cluster%s: raft shut down", n.cfg.ID, n.clusterSuffix()))
			return
		}
		f := n.raft.GetConfiguration()
		if f.Error() != nil {
			continue
		}
		in, addr := false, raft.ServerAddress("")
		for _, s := range f.Configuration().Servers {
			if string(s.ID) == n.cfg.ID {
				in, addr = true, s.Address
			}
		}
		suspect := false
		switch {
		case in && (string(addr) == n.raftAddr || n.moving.Load()):
			n.member.Store(true)
		case n.member.Load():
			suspect = true // removed, or replaced: the others say
		}
		now := time.Now()
		if _, lid := n.raft.LeaderWithID(); lid != "" || !n.member.Load() {
			leaderless = time.Time{}
		} else if leaderless.IsZero() {
			leaderless = now
		}
		lost := !leaderless.IsZero() && now.Sub(leaderless) >= leaderlessBeforeAsking
		if !(suspect || lost) || now.Sub(asked) < askEvery {
			continue
		}
		asked = now
		if err := n.askWhetherMember(); err != nil {
			n.exit(err)
			return
		}
	}
}

// askWhetherMember asks the members this node knows of for their view of
// the cluster; it returns why this node must stop if one that follows a
// leader of its own cluster no longer lists it, or lists it at another
// raft address.
func (n *Node) askWhetherMember() error {
	mine := n.clusterID()
	for _, api := range n.peerAPIs() {
		st, err := n.learnerStatus(n.ctx, api)
		if err != nil || st.LeaderID == "" || st.LeaderID == n.cfg.ID || st.NodeID == n.cfg.ID {
			continue
		}
		if mine == "" || st.ClusterID != mine {
			continue // not known to be the same cluster: it cannot tell
		}
		listed := false
		for _, m := range st.Members {
			if m.ID != n.cfg.ID {
				continue
			}
			listed = true
			if m.RaftAddr != n.raftAddr && !n.moving.Load() {
				return errs.Errorf(errs.CodeNotFound, "member %s was replaced in cluster %s: %s (following leader %s) names raft address %s for it, not this node's %s",
					n.cfg.ID, mine, st.NodeID, st.LeaderID, m.RaftAddr, n.raftAddr)
			}
		}
		if !listed {
			return errs.Errorf(errs.CodeNotFound, "member %s was removed from cluster %s: %s (following leader %s) no longer lists it",
				n.cfg.ID, mine, st.NodeID, st.LeaderID)
		}
		return nil
	}
	return nil
}

// exit logs why the node stops on its own and stops it; Done and Err
// report it.
func (n *Node) exit(err error) {
	if n.ctx.Err() != nil {
		return // stopping anyway
	}
	n.logger.Error("stopping: this node is no longer a member of its cluster", "reason", err)
	n.exitErr = err
	go func() { _ = n.stop(context.Background(), false) }()
}

// clusterID is the cluster's id as this node knows it: replicated, else
// recorded.
func (n *Node) clusterID() string {
	if id := n.fsm.ClusterID(); id != "" {
		return id
	}
	return n.record.get().ClusterID
}

func (n *Node) clusterSuffix() string {
	if id := n.clusterID(); id != "" {
		return " " + id
	}
	return ""
}
