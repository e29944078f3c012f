package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	arblog "github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// JoinRequest asks the cluster to add a voter, or updates the metadata of
// a member that is one.
type JoinRequest struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	APIAddr  string `json:"api_addr"`
	// Serves is what the member's binary serves (fsm.FSM.Served).
	Serves fsm.Capabilities `json:"serves"`
}

func (r JoinRequest) member() fsm.Member {
	return fsm.Member{ID: r.ID, RaftAddr: r.RaftAddr, APIAddr: r.APIAddr, Serves: r.Serves}
}

// RemoveRequest asks the cluster to remove a member.
type RemoveRequest struct {
	ID string `json:"id"`
}

func (r JoinRequest) validate() error {
	for _, f := range []struct{ name, v string }{{"id", r.ID}, {"raft_addr", r.RaftAddr}, {"api_addr", r.APIAddr}} {
		if err := bounds.Identifier(f.name, f.v); err != nil {
			return err
		}
	}
	return r.Serves.Validate()
}

// Join adds a voter (or updates its addresses) through the leader. It is
// idempotent: joining a member that is already present changes nothing.
func (n *Node) Join(ctx context.Context, req JoinRequest) error {
	if err := req.validate(); err != nil {
		return err
	}
	return n.onLeader(ctx, "/v1/cluster/join", req, func(ctx context.Context) error {
		return n.addVoter(ctx, req)
	})
}

// Remove removes a member through the leader: its metadata first, then its
// vote. Removing the leader makes it step down.
func (n *Node) Remove(ctx context.Context, req RemoveRequest) error {
	if err := bounds.Identifier("id", req.ID); err != nil {
		return err
	}
	return n.onLeader(ctx, "/v1/cluster/remove", req, func(ctx context.Context) error {
		return n.removeServer(ctx, req.ID)
	})
}

// onLeader runs do on the leader: here if this node leads, else by posting
// body to path on the leader's API; it retries while no leader is known.
func (n *Node) onLeader(ctx context.Context, path string, body any, do func(context.Context) error) error {
	return n.viaLeader(ctx, path, do, func(ctx context.Context, api string) error {
		return n.postJSON(ctx, n.url(api, path), body, nil)
	})
}

func (n *Node) addVoter(ctx context.Context, req JoinRequest) error {
	servers, err := n.servers()
	if err != nil {
		return err
	}
	present := false
	for _, s := range servers {
		switch {
		case string(s.ID) == req.ID && string(s.Address) == req.RaftAddr && s.Suffrage == raft.Voter:
			present = true
		case string(s.ID) != req.ID && string(s.Address) == req.RaftAddr:
			return errs.Errorf(errs.CodeConflict, "raft address %s belongs to member %s", req.RaftAddr, s.ID)
		}
	}
	if len(req.Serves.Domains) == 0 {
		// An admin's join names no capabilities: ask the member's binary.
		if req.Serves, err = n.fetchServes(ctx, req); err != nil {
			return err
		}
	}
	if !present {
		if err := n.checkJoinerServes(req); err != nil {
			return err
		}
	}
	if err := n.ensureMember(ctx, req.member()); err != nil {
		return err
	}
	if present {
		return n.settleCapabilities(ctx) // a member that upgraded or downgraded
	}
	if err := waitFuture(ctx, n.raft.AddVoter(raft.ServerID(req.ID), raft.ServerAddress(req.RaftAddr), 0, n.cfg.ApplyTimeout)); err != nil {
		return raftError("add voter", err)
	}
	n.logger.Info("added voter", "id", req.ID, "raft_addr", req.RaftAddr, "api_addr", req.APIAddr)
	return n.settleCapabilities(ctx)
}

func (n *Node) removeServer(ctx context.Context, id string) error {
	servers, err := n.servers()
	if err != nil {
		return err
	}
	found := false
	for _, s := range servers {
		found = found || string(s.ID) == id
	}
	if !found {
		return errs.Errorf(errs.CodeNotFound, "no member %q", id)
	}
	res, err := n.applyLocal(ctx, arblog.Command{Type: fsm.CmdMemberRemove, Version: 1, Payload: arblog.MustMarshal(fsm.Member{ID: id})})
	if err != nil {
		return err
	}
	if res.Err != nil && res.Err.Code != errs.CodeNotFound {
		return res.Err
	}
	if err := waitFuture(ctx, n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ApplyTimeout)); err != nil {
		return raftError("remove server", err)
	}
	n.logger.Info("removed member", "id", id)
	return nil
}

// ensureMember replicates m's metadata unless it is already current. This
// node must be the leader.
func (n *Node) ensureMember(ctx context.Context, m fsm.Member) error {
	for _, have := range n.fsm.Members() {
		if have.Same(m) {
			return nil
		}
	}
	res, err := n.applyLocal(ctx, arblog.Command{Type: fsm.CmdMemberUpsert, Version: 1, Payload: arblog.MustMarshal(m)})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	return nil
}

func (n *Node) servers() ([]raft.Server, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, raftError("read configuration", err)
	}
	return f.Configuration().Servers, nil
}

// raftError classifies a raft membership error: not being the leader is
// retryable, anything else is an outcome the caller must check.
func raftError(op string, err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		return errs.Errorf(errs.CodeUnavailable, "%s: %v", op, err)
	}
	return errs.Unknown("%s: %v", op, err)
}

// joinCluster asks the members in cfg.Join, in turn, to add this node,
// until one accepts or ctx ends.
func (n *Node) joinCluster(ctx context.Context) error {
	req := n.joinRequest()
	var last error
	for attempt := 0; ; attempt++ {
		for _, base := range n.cfg.Join {
			url := strings.TrimRight(base, "/") + "/v1/cluster/join"
			if !strings.Contains(base, "://") {
				url = n.url(strings.TrimRight(base, "/"), "/v1/cluster/join")
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := n.postJSON(cctx, url, req, nil)
			cancel()
			if err == nil {
				n.logger.Info("joined the cluster", "via", base)
				return nil
			}
			last = err
			n.logger.Warn("join attempt failed", "via", base, "error", err)
		}
		if sleepCtx(ctx, backoff(attempt+3)) != nil {
			return fmt.Errorf("cluster: could not join through %v: %w", n.cfg.Join, last)
		}
	}
}

// registerSelf makes sure the replicated member metadata holds this node's
// current addresses and what its binary serves (a restart may change
// both). The leader registers itself when it takes office; a follower
// asks the leader, whose state, unlike this node's while it replays its
// log or stays halted, is current. The leader's join is a no-op when
// nothing changed.
func (n *Node) registerSelf() {
	req := n.joinRequest()
	me := req.member()
	for attempt := 0; ; attempt++ {
		if n.IsLeader() {
			for _, m := range n.fsm.Members() {
				if m.Same(me) {
					return
				}
			}
		} else if n.inConfiguration() {
			if _, api := n.leaderAPI(); api != "" {
				ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
				err := n.postJSON(ctx, n.url(api, "/v1/cluster/join"), req, nil)
				cancel()
				if err == nil {
					return
				}
				if n.ctx.Err() == nil {
					n.logger.Debug("registering member metadata failed", "error", err)
				}
			}
		}
		if sleepCtx(n.ctx, min(backoff(attempt+4), time.Second)) != nil {
			return
		}
	}
}

// joinRequest is this node's own metadata, as a join asks for it.
func (n *Node) joinRequest() JoinRequest {
	return JoinRequest{ID: n.cfg.ID, RaftAddr: n.raftAddr, APIAddr: n.apiAddr, Serves: n.fsm.Served()}
}

func (n *Node) inConfiguration() bool {
	servers, err := n.servers()
	if err != nil {
		return false
	}
	for _, s := range servers {
		if string(s.ID) == n.cfg.ID {
			return true
		}
	}
	return false
}
