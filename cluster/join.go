package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/errs"
)

// Joining, from the side of the node that joins: the first join of a node
// without state (joinCluster), and the upkeep of its own member metadata
// while it runs (registerSelf). The leader's side is membership.go.

// joinCluster asks the members in cfg.Join, in turn, to add this node,
// until one accepts, a decision refuses it (a conflict, a bad request, a
// missing credential: asking again would not change it), or ctx ends.
func (mb *membership) joinCluster(ctx context.Context) error {
	req := mb.joinRequest()
	req.Fresh, req.Replace, req.Refresh = true, mb.cfg.Replace, false
	var last error
	for attempt := 0; ; attempt++ {
		for _, base := range mb.cfg.Join {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := mb.postJSON(cctx, mb.joinURL(base, "/v1/cluster/join"), req, nil)
			cancel()
			if err == nil || mb.inConfiguration() { // a lost reply to an accepted join
				mb.member.Store(true)
				mb.logger.Info("joined the cluster as a non-voter; the leader promotes it once it has caught up", "via", base, "replace", req.Replace)
				return nil
			}
			mb.logger.Warn("join attempt failed", "via", base, "error", err, "final", final(err))
			if final(err) {
				return fmt.Errorf("cluster: join refused by %s: %w", base, err)
			}
			last = err
		}
		if sleepCtx(ctx, backoff(attempt+3)) != nil {
			return fmt.Errorf("cluster: could not join through %v: %w", mb.cfg.Join, last)
		}
	}
}

// final reports whether err is a decision that asking again would not
// change.
func final(err error) bool {
	switch errs.CodeOf(err) {
	case errs.CodeConflict, errs.CodeInvalid, errs.CodeUnauthorized, errs.CodeForbidden, errs.CodeNotFound:
		return true
	}
	return false
}

// joinURL is path on the member base names (a URL, or host:port).
func (mb *membership) joinURL(base, path string) string {
	base = strings.TrimRight(base, "/")
	if strings.Contains(base, "://") {
		return base + path
	}
	return mb.url(base, path)
}

// registerSelf makes sure the replicated member metadata holds this node's
// current addresses and what its binary serves (a restart may change
// what it serves; ChangeAddress, its addresses). The leader registers
// itself when it takes office; a follower asks the leader, whose state,
// unlike this node's while it replays its log or stays halted, is
// current. A node that moved (ChangeAddress) cannot hear the leader until
// the leader knows its new raft address, so it asks every member it knows
// of, which forward to the leader. The leader's join is a no-op when
// nothing changed.
func (mb *membership) registerSelf() {
	req := mb.joinRequest()
	me := req.member()
	for attempt := 0; ; attempt++ {
		switch {
		case mb.isLeader():
			for _, m := range mb.fsm.Members() {
				if m.Same(me) {
					return
				}
			}
		case req.ChangeAddress:
			for _, api := range mb.peerAPIs() {
				ctx, cancel := context.WithTimeout(mb.ctx, 5*time.Second)
				err := mb.postJSON(ctx, mb.joinURL(api, "/v1/cluster/join"), req, nil)
				cancel()
				if err == nil {
					mb.logger.Info("the leader moved this member to its new addresses", "via", api, "raft_addr", req.RaftAddr, "api_addr", req.APIAddr)
					req.ChangeAddress, req.Refresh = false, true
					break
				}
				if mb.ctx.Err() == nil {
					mb.logger.Warn("asking to move this member to its new addresses failed", "via", api, "error", err)
				}
			}
		case mb.inConfiguration():
			if _, api := mb.leaderAPI(); api != "" {
				ctx, cancel := context.WithTimeout(mb.ctx, 5*time.Second)
				err := mb.postJSON(ctx, mb.url(api, "/v1/cluster/join"), req, nil)
				cancel()
				if err == nil {
					return
				}
				if errs.CodeOf(err) == errs.CodeNotFound {
					mb.logger.Warn("this node is no longer a member of the cluster: it was removed", "error", err)
					return
				}
				if mb.ctx.Err() == nil {
					mb.logger.Debug("registering member metadata failed", "error", err)
				}
			}
		}
		if sleepCtx(mb.ctx, min(backoff(attempt+4), time.Second)) != nil {
			return
		}
	}
}

// joinRequest is this node's own metadata, as a member refreshes it (a
// first join clears Refresh).
func (mb *membership) joinRequest() JoinRequest {
	moving := mb.moving.Load()
	return JoinRequest{ID: mb.cfg.ID, RaftAddr: mb.raftAddr, APIAddr: mb.apiAddr, Serves: mb.fsm.Served(), ChangeAddress: moving, Refresh: !moving}
}

func (mb *membership) inConfiguration() bool {
	servers, err := mb.servers()
	if err != nil {
		return false
	}
	for _, s := range servers {
		if string(s.ID) == mb.cfg.ID {
			return true
		}
	}
	return false
}
