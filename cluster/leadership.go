package cluster

import (
	"context"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
)

// watchLeadership runs the leader's duties while this node leads: commit a
// Tick at the start of each term (which makes linearizable reads safe and
// settles the FSM clock), then, every tick interval, register its own
// metadata, settle the enabled command set, name the cluster if it has no
// id yet, drop the metadata of former members, and tick; meanwhile
// promote the non-voters that have caught up (promoteLoop).
func (n *Node) watchLeadership(notify <-chan bool) {
	stop := func() {}
	defer func() { stop() }()
	for {
		select {
		case leading := <-notify:
			n.metrics.leaderChanges.Inc()
			stop()
			stop = func() {}
			n.readyTerm.Store(0)
			if !leading {
				n.logger.Info("lost leadership")
				continue
			}
			n.restoreTimeouts()
			ctx, cancel := context.WithCancel(n.ctx)
			stop = cancel
			n.logger.Info("became leader", "term", n.raft.CurrentTerm())
			n.goBackground(func() { n.lead(ctx) })
		case <-n.ctx.Done():
			return
		}
	}
}

func (n *Node) lead(ctx context.Context) {
	term := n.raft.CurrentTerm()
	for attempt := 0; ; attempt++ {
		if h := n.fsm.Halted(); h != nil {
			// A halted replica can commit but never apply its first tick:
			// it hands over rather than hold the cluster without a
			// working leader (it can win an election: its log is whole).
			n.stepDownHalted(h)
		} else if _, err := n.tick(ctx); err == nil {
			break
		}
		if sleepCtx(ctx, backoff(attempt)) != nil {
			return
		}
	}
	if ctx.Err() == nil && n.IsLeader() && n.raft.CurrentTerm() == term {
		n.readyTerm.Store(term)
		// Its whole log is applied: what a node that leads from its
		// start must have applied before it is ready (ready.go).
		n.guard.start.record(n.fsm.AppliedIndex())
	}
	n.goBackground(func() { n.promoteLoop(ctx) })
	t := time.NewTicker(n.cfg.TickInterval)
	defer t.Stop()
	for {
		n.maintainMembers(ctx)
		if err := n.settleCapabilities(ctx); err != nil && ctx.Err() == nil {
			n.logger.Warn("settling the enabled command set failed", "error", err)
		}
		if err := n.ensureClusterID(ctx); err != nil && ctx.Err() == nil {
			n.logger.Warn("naming the cluster failed", "error", err)
		}
		select {
		case <-t.C:
			if h := n.fsm.Halted(); h != nil {
				n.stepDownHalted(h)
				continue
			}
			if err := n.tickUntilCaughtUp(ctx); err != nil && ctx.Err() == nil {
				n.logger.Warn("tick failed", "error", err)
			}
		case <-ctx.Done():
			return
		}
	}
}

// tick proposes one Tick on this node, which must be the leader: version
// 2, with the ledger's row cap, once the cluster enables it.
func (n *Node) tick(ctx context.Context) (*fsm.Response, error) {
	t := fsm.Tick{
		IdemRetentionMs: n.cfg.IdempotencyRetention.Milliseconds(),
		FeedRetain:      n.cfg.ChangeFeedRetain,
		Budget:          n.cfg.TickBudget,
	}
	version := uint16(1)
	if enabled, gated := n.fsm.Enabled(); gated && enabled.Allows(fsm.CmdTick, 2) {
		version, t.LedgerMaxRows = 2, n.cfg.IdempotencyMaxRows
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ApplyTimeout)
	defer cancel()
	res, err := n.applyLocal(ctx, arblog.Command{Type: fsm.CmdTick, Version: version, Payload: arblog.MustMarshal(t)})
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, res.Err
	}
	return res, nil
}

// maxCatchUpTicks bounds the ticks proposed back to back while a tick
// reports a backlog, before the next interval.
const maxCatchUpTicks = 32

// tickUntilCaughtUp ticks, and ticks again at once while the last tick
// used its whole budget (at most maxCatchUpTicks times).
func (n *Node) tickUntilCaughtUp(ctx context.Context) error {
	for range maxCatchUpTicks {
		res, err := n.tick(ctx)
		if err != nil {
			return err
		}
		var out fsm.TickResult
		if err := arblog.Unmarshal(res.Result, &out); err != nil || !out.Backlog {
			return err
		}
	}
	return nil
}

// stepDownHalted hands leadership to a member that can still apply: a
// halted leader can append entries but never apply them, so nothing it
// leads would answer.
func (n *Node) stepDownHalted(h *fsm.Halt) {
	if !n.IsLeader() || n.voterCount() < 2 {
		return
	}
	n.logger.Error("halted leader hands over leadership", "halt", h.String())
	if err := n.raft.LeadershipTransfer().Error(); err != nil {
		n.logger.Warn("leadership transfer from a halted leader failed", "error", err)
	}
}

// ensureClusterID names the cluster once every member serves the command
// (see fsm.CmdClusterID): with the id this node chose when it bootstrapped
// the cluster, else a new random one. This node must be the leader.
func (n *Node) ensureClusterID(ctx context.Context) error {
	if n.fsm.ClusterID() != "" {
		return nil
	}
	if enabled, gated := n.fsm.Enabled(); !gated || !enabled.Allows(fsm.CmdClusterID, 1) {
		return nil // not every member serves it yet
	}
	id := n.record.get().ClusterID
	if id == "" {
		id = newClusterID()
	}
	res, err := n.applyLocal(ctx, arblog.Command{Type: fsm.CmdClusterID, Version: 1, Payload: arblog.MustMarshal(fsm.ClusterIDCommand{ID: id})})
	if err != nil {
		return err
	}
	if res.Err != nil && res.Err.Code != errs.CodeConflict {
		return res.Err
	}
	n.logger.Info("the cluster is named", "cluster_id", n.fsm.ClusterID())
	return nil
}

// maintainMembers registers this node's own metadata when it is not
// current (its first term, a move, or a restore, which brings back the
// members as they were when it was prepared), and drops the metadata of
// ids that are no longer members. This node must be the leader.
func (n *Node) maintainMembers(ctx context.Context) {
	servers, err := n.servers()
	if err != nil {
		return
	}
	meta := n.metadata()
	if me := n.joinRequest(); !meta[me.ID].Same(me.member()) || me.ChangeAddress {
		if err := n.addMember(ctx, me); err != nil && ctx.Err() == nil {
			n.logger.Warn("registering own metadata failed", "error", err)
		}
	}
	in := map[string]bool{}
	for _, s := range servers {
		in[string(s.ID)] = true
	}
	for id := range meta {
		if !in[id] {
			if err := n.pruneMetadata(ctx); err != nil && ctx.Err() == nil {
				n.logger.Warn("removing the metadata of former members failed", "error", err)
			}
			return
		}
	}
}
