package cluster

import (
	"context"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/hashicorp/raft"
)

// TransferRequest asks the leader to hand its leadership over: to the
// voter To names, or ("" ) to the voter raft finds most up to date, as
// etcdctl move-leader and consul operator raft transfer-leader do (an
// operator drains a node before maintenance).
type TransferRequest struct {
	To string `json:"to,omitempty"`
}

// TransferResult names the leader after the transfer.
type TransferResult struct {
	LeaderID string `json:"leader_id"`
}

// transferWait bounds how long a transfer waits for the new leader to be
// known once raft reports the handover done.
const transferWait = 5 * time.Second

// TransferLeadership hands the cluster's leadership to req.To (or to the
// best other voter), from the leader, wherever it is asked. Asking for the
// leader it already has does nothing. A To that is no member is
// not_found; a non-voter, or a cluster without another voter, invalid.
func (n *Node) TransferLeadership(ctx context.Context, req TransferRequest) (*TransferResult, error) {
	return n.members.TransferLeadership(ctx, req)
}

// TransferLeadership is Node.TransferLeadership.
func (mb *membership) TransferLeadership(ctx context.Context, req TransferRequest) (*TransferResult, error) {
	if req.To != "" {
		if err := bounds.Identifier("to", req.To); err != nil {
			return nil, err
		}
	}
	var res TransferResult
	err := mb.leader.viaLeader(ctx, "leadership transfer", func(ctx context.Context) error {
		return mb.transferFromHere(ctx, req.To)
	}, func(ctx context.Context, api string) error {
		return mb.postJSON(ctx, mb.url(api, "/v1/cluster/transfer-leader"), req, &res)
	})
	if err != nil {
		return nil, err
	}
	if res.LeaderID == "" { // done here: wait until the new leader is known
		res.LeaderID = mb.awaitLeader(ctx, req.To)
	}
	return &res, nil
}

// awaitLeader waits, at most transferWait, until this node knows a
// leader that is to (or, with to "", any other than itself), and returns
// the leader it knows then.
func (c *core) awaitLeader(ctx context.Context, to string) string {
	settled := func(id string) bool { return id != "" && (id == to || to == "" && id != c.cfg.ID) }
	deadline := time.Now().Add(transferWait)
	id := c.leaderID()
	for !settled(id) && time.Now().Before(deadline) && c.sleep(ctx, 20*time.Millisecond) == nil {
		id = c.leaderID()
	}
	return id
}

// leaderID is the leader this node knows of ("" none).
func (c *core) leaderID() string {
	_, id := c.raft.LeaderWithID()
	return string(id)
}

// transferFromHere runs the transfer on the leader.
func (c *core) transferFromHere(ctx context.Context, to string) error {
	if to == c.cfg.ID {
		return nil // already the leader
	}
	servers, err := c.servers()
	if err != nil {
		return errs.Errorf(errs.CodeUnavailable, "configuration: %v", err)
	}
	var target *raft.Server
	others := 0
	for i, s := range servers {
		if s.Suffrage == raft.Voter && string(s.ID) != c.cfg.ID {
			others++
		}
		if string(s.ID) == to {
			target = &servers[i]
		}
	}
	var f raft.Future
	switch {
	case to != "" && target == nil:
		return errs.Errorf(errs.CodeNotFound, "%q is not a member of the cluster", to)
	case to != "" && target.Suffrage != raft.Voter:
		return errs.Errorf(errs.CodeInvalid, "%q is not a voter yet (a member that joined is promoted once it has caught up): it cannot lead", to)
	case others == 0:
		return errs.New(errs.CodeInvalid, "the cluster has no other voter to hand its leadership to")
	case to != "":
		f = c.raft.LeadershipTransferToServer(target.ID, target.Address)
	default:
		f = c.raft.LeadershipTransfer()
	}
	if err := waitFuture(ctx, f); err != nil {
		return errs.Errorf(errs.CodeUnavailable, "leadership transfer: %v", err)
	}
	return nil
}
