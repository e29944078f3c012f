package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/cluster/memberrec"
	"github.com/arbiterhq/arbiter/fsm"
)

// The data directory's record of its membership (package memberrec).
// Start compares a node's configuration with it, so that a wrong flag is
// refused before it can do harm (see checkResume); a running node keeps
// it current (keepRecord), and records a new address only once the
// cluster holds it.

// recordSpacing is the least time between two refreshes of the record.
const recordSpacing = 500 * time.Millisecond

// keepRecord refreshes the record after every change of the local state,
// at most every recordSpacing, until the node stops.
func (mb *membership) keepRecord() {
	for {
		changed := mb.fsm.Changed()
		mb.refreshRecord()
		if sleepCtx(mb.ctx, recordSpacing) != nil {
			return
		}
		select {
		case <-changed:
		case <-time.After(time.Second): // configuration changes apply nothing to the FSM at times
		case <-mb.ctx.Done():
			return
		}
	}
}

// refreshRecord records the cluster's id once replicated, this member's
// addresses once the cluster holds them (which ends a move), and the
// other members' API addresses.
func (mb *membership) refreshRecord() {
	servers, err := mb.servers()
	if err != nil {
		return
	}
	meta := mb.metadata()
	moved := false
	changed, err := mb.record.Update(func(r *memberrec.Record) {
		if id := mb.fsm.ClusterID(); id != "" && id != r.ClusterID {
			if r.ClusterID != "" {
				mb.logger.Info("the cluster chose another id than the one this node proposed", "cluster_id", id, "proposed", r.ClusterID)
			}
			r.ClusterID = id
		}
		var peers []memberrec.Peer
		for _, s := range servers {
			m := meta[string(s.ID)]
			switch {
			case string(s.ID) == mb.cfg.ID:
				if string(s.Address) == mb.raftAddr && m.APIAddr == mb.apiAddr {
					moved = r.RaftAddr != mb.raftAddr || r.APIAddr != mb.apiAddr
					r.RaftAddr, r.APIAddr = mb.raftAddr, mb.apiAddr
				}
			case m.APIAddr != "" && len(peers) < fsm.MaxMembers:
				peers = append(peers, memberrec.Peer{ID: string(s.ID), APIAddr: m.APIAddr})
			}
		}
		if len(peers) > 0 {
			slices.SortFunc(peers, func(a, b memberrec.Peer) int { return strings.Compare(a.ID, b.ID) })
			r.Peers = peers
		}
	})
	if err != nil {
		mb.logger.Warn("keeping the member record failed", "error", err)
		return
	}
	if changed && moved {
		mb.moving.Store(false)
		mb.logger.Info("the cluster holds this member's new addresses; recorded them", "raft_addr", mb.raftAddr, "api_addr", mb.apiAddr)
	}
}

// peerAPIs lists where this node may reach other members' APIs: the
// members it knows of (replicated metadata, then its record), then Join.
func (mb *membership) peerAPIs() []string {
	var out []string
	add := func(a string) {
		if a != "" && a != mb.apiAddr && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, m := range mb.fsm.Members() {
		if m.ID != mb.cfg.ID {
			add(m.APIAddr)
		}
	}
	for _, p := range mb.record.Get().Peers {
		add(p.APIAddr)
	}
	for _, j := range mb.cfg.Join {
		add(j)
	}
	return out
}

// newClusterID is a random cluster id.
func newClusterID() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on supported platforms; a clock-based
		// id still tells clusters apart.
		return fmt.Sprintf("c%x", time.Now().UnixNano())
	}
	return "c" + hex.EncodeToString(b)
}
