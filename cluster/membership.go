package cluster

import (
	"context"
	"errors"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	arblog "github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// Membership. Raft's configuration is the authority on who is a member
// and who votes; the replicated metadata (fsm.Member) adds each member's
// API address and what its binary serves. Every change goes through the
// leader, one at a time (Node.memberMu):
//
//   - a new member joins as a non-voter and is promoted to voter only once
//     it has caught up with the leader (promote.go), so a member that never
//     starts, or never catches up, never counts toward quorum;
//   - an id that is a member already, with other addresses, is refused
//     (409) unless the request asks to replace it (the old member is
//     removed, the new process joins as a non-voter) or says the member
//     itself moved (its raft address is changed in place);
//   - an address that belongs to another member is refused (409);
//   - a process without state that asks to join with the id and address
//     of a voter lost that voter's data: refused unless it asks to replace
//     it, for a voter must never vote again with less than it had.

// JoinRequest asks the cluster to add a member, or updates the metadata of
// one.
type JoinRequest struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	APIAddr  string `json:"api_addr"`
	// Serves is what the member's binary serves (fsm.FSM.Served).
	Serves fsm.Capabilities `json:"serves"`
	// Replace asks that the member with this id be replaced by the process
	// at these addresses: removed, then added again as a non-voter. The
	// old process must be gone for good.
	Replace bool `json:"replace,omitempty"`
	// ChangeAddress says the member itself, with its data, now runs at
	// these addresses: its raft address changes in place, and it keeps
	// its vote.
	ChangeAddress bool `json:"change_address,omitempty"`
	// Fresh says the process asking has no raft state (a first join).
	Fresh bool `json:"fresh,omitempty"`
	// Refresh says a member asks only that its own metadata be brought up
	// to date (a restart, a new binary): it never adds a member. A member
	// removed while its request was on its way is told so (404) instead of
	// being added back with the addresses it had.
	Refresh bool `json:"refresh,omitempty"`
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
	switch {
	case r.Replace && r.ChangeAddress:
		return errs.New(errs.CodeInvalid, "replace and change_address are exclusive: a replacement is a new process, a change of address the same one")
	case r.ChangeAddress && r.Fresh:
		return errs.New(errs.CodeInvalid, "change_address from a process without state: there is no membership to move")
	case r.Refresh && (r.Fresh || r.Replace):
		return errs.New(errs.CodeInvalid, "refresh updates an existing member's metadata: it cannot come from a process without state or ask for a replacement")
	}
	return r.Serves.Validate()
}

// Join adds a member through the leader (as a non-voter, promoted once it
// has caught up), replaces one, moves one to new addresses, or refreshes
// its metadata. It is idempotent: joining a member that is already present
// with the same addresses changes nothing.
func (n *Node) Join(ctx context.Context, req JoinRequest) error {
	return n.members.Join(ctx, req)
}

// Join is Node.Join.
func (mb *membership) Join(ctx context.Context, req JoinRequest) error {
	if err := req.validate(); err != nil {
		return err
	}
	return mb.onLeader(ctx, "/v1/cluster/join", req, func(ctx context.Context) error {
		return mb.addMember(ctx, req)
	})
}

// Remove removes a member through the leader: its metadata first, then its
// vote. Removing the leader makes it step down.
func (n *Node) Remove(ctx context.Context, req RemoveRequest) error {
	return n.members.Remove(ctx, req)
}

// Remove is Node.Remove.
func (mb *membership) Remove(ctx context.Context, req RemoveRequest) error {
	if err := bounds.Identifier("id", req.ID); err != nil {
		return err
	}
	return mb.onLeader(ctx, "/v1/cluster/remove", req, func(ctx context.Context) error {
		return mb.removeServer(ctx, req.ID)
	})
}

// onLeader runs do on the leader: here if this node leads, else by posting
// body to path on the leader's API; it retries while no leader is known.
func (mb *membership) onLeader(ctx context.Context, path string, body any, do func(context.Context) error) error {
	return mb.leader.viaLeader(ctx, path, do, func(ctx context.Context, api string) error {
		return mb.postJSON(ctx, mb.url(api, path), body, nil)
	})
}

// addMember decides a join on the leader (see the rules at the top).
func (mb *membership) addMember(ctx context.Context, req JoinRequest) error {
	mb.memberMu.Lock()
	defer mb.memberMu.Unlock()
	servers, err := mb.servers()
	if err != nil {
		return err
	}
	var existing *raft.Server
	for i, s := range servers {
		switch {
		case string(s.ID) == req.ID:
			existing = &servers[i]
		case string(s.Address) == req.RaftAddr:
			return errs.Errorf(errs.CodeConflict, "raft address %s belongs to member %s", req.RaftAddr, s.ID)
		}
	}
	meta := mb.metadata()
	for _, s := range servers {
		if string(s.ID) != req.ID && meta[string(s.ID)].APIAddr == req.APIAddr {
			return errs.Errorf(errs.CodeConflict, "API address %s belongs to member %s", req.APIAddr, s.ID)
		}
	}
	have := meta[req.ID]
	switch {
	case existing == nil:
		if req.ChangeAddress {
			return errs.Errorf(errs.CodeNotFound, "%s is not a member of this cluster (it was removed): there is no membership to move; to join again, start it with an empty data directory", req.ID)
		}
		if req.Refresh {
			return errs.Errorf(errs.CodeNotFound, "%s is not a member of this cluster (it was removed): there is no metadata to refresh; to join again, start it with an empty data directory", req.ID)
		}
		return mb.addLearner(ctx, req)
	case string(existing.Address) == req.RaftAddr && (have.APIAddr == "" || have.APIAddr == req.APIAddr):
		if req.Fresh && existing.Suffrage == raft.Voter {
			if !req.Replace {
				return errs.Errorf(errs.CodeConflict,
					"member %s is a voter at raft address %s, and the process asking to join as %s there has no data: a voter that lost its data must not vote before it has caught up again. If %s's data is lost for good, ask for a replacement (--replace; \"replace\": true) to re-add it as a non-voter",
					req.ID, existing.Address, req.ID, req.ID)
			}
			return mb.replaceMember(ctx, req, *existing)
		}
		return mb.refreshMember(ctx, req)
	case req.ChangeAddress:
		return mb.moveMember(ctx, req, *existing)
	case req.Replace:
		return mb.replaceMember(ctx, req, *existing)
	default:
		return errs.Errorf(errs.CodeConflict,
			"member %s already exists, with raft address %s and API address %s; this request names raft address %s and API address %s. Give the new process another id (--id), or, if it replaces %s for good, ask for a replacement (--replace; \"replace\": true)",
			req.ID, existing.Address, orNone(have.APIAddr), req.RaftAddr, req.APIAddr, req.ID)
	}
}

// addLearner adds a new member as a non-voter; the leader promotes it once
// it has caught up (promoteLearners).
func (mb *membership) addLearner(ctx context.Context, req JoinRequest) error {
	if len(req.Serves.Domains) == 0 {
		// An admin's join names no capabilities: ask the member's binary.
		req.Serves = mb.fetchServes(ctx, req)
	}
	if err := mb.checkJoinerServes(req); err != nil {
		return err
	}
	if err := mb.ensureMember(ctx, req.member()); err != nil {
		return err
	}
	if err := waitFuture(ctx, mb.raft.AddNonvoter(raft.ServerID(req.ID), raft.ServerAddress(req.RaftAddr), 0, mb.cfg.ApplyTimeout)); err != nil {
		return raftError("add non-voter", err)
	}
	mb.logger.Info("added a non-voter; it becomes a voter once it has caught up", "id", req.ID, "raft_addr", req.RaftAddr, "api_addr", req.APIAddr)
	return mb.caps.settleCapabilities(ctx)
}

// refreshMember brings the metadata of a member that is present with the
// same addresses up to date (a restart with an upgraded binary).
func (mb *membership) refreshMember(ctx context.Context, req JoinRequest) error {
	if len(req.Serves.Domains) == 0 {
		req.Serves = mb.fetchServes(ctx, req)
	}
	if err := mb.ensureMember(ctx, req.member()); err != nil {
		return err
	}
	return mb.caps.settleCapabilities(ctx)
}

// moveMember changes the addresses of a member that runs on with its data
// (ChangeAddress): raft's address in place, keeping its suffrage, then the
// metadata.
func (mb *membership) moveMember(ctx context.Context, req JoinRequest, old raft.Server) error {
	if string(old.Address) != req.RaftAddr {
		f := mb.raft.AddNonvoter
		if old.Suffrage == raft.Voter {
			f = mb.raft.AddVoter // of a present voter: changes its address only
		}
		if err := waitFuture(ctx, f(old.ID, raft.ServerAddress(req.RaftAddr), 0, mb.cfg.ApplyTimeout)); err != nil {
			return raftError("change address", err)
		}
	}
	if len(req.Serves.Domains) == 0 {
		req.Serves = mb.fetchServes(ctx, req)
	}
	if err := mb.ensureMember(ctx, req.member()); err != nil {
		return err
	}
	mb.logger.Info("moved a member to new addresses", "id", req.ID, "raft_addr", req.RaftAddr, "from_raft_addr", old.Address, "api_addr", req.APIAddr)
	return mb.caps.settleCapabilities(ctx)
}

// replaceMember removes old and adds the process of req in its place, as a
// non-voter. The leader never replaces itself: it is evidently alive.
func (mb *membership) replaceMember(ctx context.Context, req JoinRequest, old raft.Server) error {
	if req.ID == mb.cfg.ID {
		return errs.Errorf(errs.CodeConflict, "member %s is the leader, running at raft address %s: stop it before replacing it (a replacement takes the id of a member gone for good)", req.ID, old.Address)
	}
	if err := waitFuture(ctx, mb.raft.RemoveServer(old.ID, 0, mb.cfg.ApplyTimeout)); err != nil {
		return raftError("remove the replaced member", err)
	}
	mb.logger.Warn("removed a member to replace it", "id", req.ID, "old_raft_addr", old.Address, "raft_addr", req.RaftAddr)
	return mb.addLearner(ctx, req)
}

func (mb *membership) removeServer(ctx context.Context, id string) error {
	mb.memberMu.Lock()
	defer mb.memberMu.Unlock()
	servers, err := mb.servers()
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
	res, err := mb.host.applyLocal(ctx, arblog.Command{Type: fsm.CmdMemberRemove, Version: 1, Payload: arblog.MustMarshal(fsm.Member{ID: id})})
	if err != nil {
		return err
	}
	if res.Err != nil && res.Err.Code != errs.CodeNotFound {
		return res.Err
	}
	if err := waitFuture(ctx, mb.raft.RemoveServer(raft.ServerID(id), 0, mb.cfg.ApplyTimeout)); err != nil {
		return raftError("remove server", err)
	}
	mb.logger.Info("removed member", "id", id)
	return nil
}

// pruneMetadata removes the metadata of ids that are not in the raft
// configuration (left by a recovery, or by a join whose raft change never
// happened). This node must be the leader.
func (mb *membership) pruneMetadata(ctx context.Context) error {
	mb.memberMu.Lock()
	defer mb.memberMu.Unlock()
	servers, err := mb.servers()
	if err != nil {
		return err
	}
	in := map[string]bool{}
	for _, s := range servers {
		in[string(s.ID)] = true
	}
	for _, m := range mb.fsm.Members() {
		if in[m.ID] {
			continue
		}
		res, err := mb.host.applyLocal(ctx, arblog.Command{Type: fsm.CmdMemberRemove, Version: 1, Payload: arblog.MustMarshal(fsm.Member{ID: m.ID})})
		if err != nil {
			return err
		}
		if res.Err != nil && res.Err.Code != errs.CodeNotFound {
			return res.Err
		}
		mb.logger.Info("removed the metadata of a former member", "id", m.ID)
	}
	return nil
}

// ensureMember replicates m's metadata unless it is already current. This
// node must be the leader.
func (mb *membership) ensureMember(ctx context.Context, m fsm.Member) error {
	for _, have := range mb.fsm.Members() {
		if have.Same(m) {
			return nil
		}
	}
	res, err := mb.host.applyLocal(ctx, arblog.Command{Type: fsm.CmdMemberUpsert, Version: 1, Payload: arblog.MustMarshal(m)})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	return nil
}

// raftError classifies a raft membership error: not being the leader is
// retryable, anything else is an outcome the caller must check.
func raftError(op string, err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		return errs.Errorf(errs.CodeUnavailable, "%s: %v", op, err)
	}
	return errs.Unknown("%s: %v", op, err)
}

func orNone(s string) string {
	if s == "" {
		return "(none registered)"
	}
	return s
}

// recordedClusterID is the cluster id of this member's record (the one it
// proposed at bootstrap, or the one it learnt).
func (mb *membership) recordedClusterID() string { return mb.record.Get().ClusterID }
