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
func (ld *leadership) watchLeadership(notify <-chan bool) {
	stop := func() {}
	defer func() { stop() }()
	for {
		select {
		case leading := <-notify:
			ld.metrics.leaderChanges.Inc()
			stop()
			stop = func() {}
			ld.host.termReady(0)
			if !leading {
				ld.logger.Info("lost leadership")
				continue
			}
			ld.host.restoreTimeouts()
			ctx, cancel := context.WithCancel(ld.ctx)
			stop = cancel
			ld.logger.Info("became leader", "term", ld.raft.CurrentTerm())
			ld.goBackground(func() { ld.lead(ctx) })
		case <-ld.ctx.Done():
			return
		}
	}
}

func (ld *leadership) lead(ctx context.Context) {
	term := ld.raft.CurrentTerm()
	for attempt := 0; ; attempt++ {
		if h := ld.fsm.Halted(); h != nil {
			// A halted replica can commit but never apply its first tick:
			// it hands over rather than hold the cluster without a
			// working leader (it can win an election: its log is whole).
			ld.stepDownHalted(h)
		} else if _, err := ld.tick(ctx); err == nil {
			break
		}
		if sleepCtx(ctx, backoff(attempt)) != nil {
			return
		}
	}
	if ctx.Err() == nil && ld.isLeader() && ld.raft.CurrentTerm() == term {
		// Its whole log is applied: what a node that leads from its
		// start must have applied before it is ready (ready.go).
		ld.host.termReady(term)
	}
	ld.goBackground(func() { ld.members.promoteLoop(ctx) })
	t := time.NewTicker(ld.cfg.TickInterval)
	defer t.Stop()
	for {
		ld.members.maintainMembers(ctx)
		if err := ld.settleCapabilities(ctx); err != nil && ctx.Err() == nil {
			ld.logger.Warn("settling the enabled command set failed", "error", err)
		}
		if err := ld.ensureClusterID(ctx); err != nil && ctx.Err() == nil {
			ld.logger.Warn("naming the cluster failed", "error", err)
		}
		select {
		case <-t.C:
			if h := ld.fsm.Halted(); h != nil {
				ld.stepDownHalted(h)
				continue
			}
			if err := ld.tickUntilCaughtUp(ctx); err != nil && ctx.Err() == nil {
				ld.logTickError(err, term)
			}
		case <-ctx.Done():
			return
		}
	}
}

// logTickError logs a failed tick of the leader of term: at INFO when a
// handover explains it (raft refused the entry before logging it, as it
// does while it hands leadership over, or the node no longer leads in
// that term: a tick in flight when leadership moves fails as an unknown
// outcome), which a healthy cluster does (TestHealthyMembershipIsQuiet
// failed on it under load); at WARN otherwise (a tick that times out
// while this node still leads: no quorum), when an operator has
// something to look at.
func (ld *leadership) logTickError(err error, term uint64) {
	notApplied := errs.CodeOf(err) == errs.CodeUnavailable && !errs.IsOutcomeUnknown(err)
	if notApplied || !ld.isLeader() || ld.raft.CurrentTerm() != term {
		ld.logger.Info("tick not applied: leadership is moving", "error", err)
		return
	}
	ld.logger.Warn("tick failed", "error", err)
}

// tick proposes one Tick on this node, which must be the leader: version
// 2, with the ledger's row cap, once the cluster enables it; version 3,
// with its byte cap too, once the cluster enables that.
func (ld *leadership) tick(ctx context.Context) (*fsm.Response, error) {
	t := fsm.Tick{
		IdemRetentionMs: ld.cfg.IdempotencyRetention.Milliseconds(),
		FeedRetain:      ld.cfg.ChangeFeedRetain,
		Budget:          ld.cfg.TickBudget,
	}
	version := uint16(1)
	if enabled, gated := ld.fsm.Enabled(); gated && enabled.Allows(fsm.CmdTick, 2) {
		version, t.LedgerMaxRows = 2, ld.cfg.IdempotencyMaxRows
		if enabled.Allows(fsm.CmdTick, 3) {
			version, t.LedgerMaxBytes = 3, ld.cfg.IdempotencyMaxBytes
		}
	}
	ctx, cancel := context.WithTimeout(ctx, ld.cfg.ApplyTimeout)
	defer cancel()
	res, err := ld.host.applyLocal(ctx, arblog.Command{Type: fsm.CmdTick, Version: version, Payload: arblog.MustMarshal(t)})
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
func (ld *leadership) tickUntilCaughtUp(ctx context.Context) error {
	for range maxCatchUpTicks {
		res, err := ld.tick(ctx)
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
func (ld *leadership) stepDownHalted(h *fsm.Halt) {
	if !ld.isLeader() || ld.voterCount() < 2 {
		return
	}
	ld.logger.Error("halted leader hands over leadership", "halt", h.String())
	if err := waitFuture(ld.ctx, ld.raft.LeadershipTransfer()); err != nil {
		ld.logger.Warn("leadership transfer from a halted leader failed", "error", err)
	}
}

// ensureClusterID names the cluster once every member serves the command
// (see fsm.CmdClusterID): with the id this node chose when it bootstrapped
// the cluster, else a new random one. This node must be the leader.
func (ld *leadership) ensureClusterID(ctx context.Context) error {
	if ld.fsm.ClusterID() != "" {
		return nil
	}
	if enabled, gated := ld.fsm.Enabled(); !gated || !enabled.Allows(fsm.CmdClusterID, 1) {
		return nil // not every member serves it yet
	}
	id := ld.members.recordedClusterID()
	if id == "" {
		id = newClusterID()
	}
	res, err := ld.host.applyLocal(ctx, arblog.Command{Type: fsm.CmdClusterID, Version: 1, Payload: arblog.MustMarshal(fsm.ClusterIDCommand{ID: id})})
	if err != nil {
		return err
	}
	if res.Err != nil && res.Err.Code != errs.CodeConflict {
		return res.Err
	}
	ld.logger.Info("the cluster is named", "cluster_id", ld.fsm.ClusterID())
	return nil
}

// maintainMembers registers this node's own metadata when it is not
// current (its first term, a move, or a restore, which brings back the
// members as they were when it was prepared), and drops the metadata of
// ids that are no longer members. This node must be the leader.
func (mb *membership) maintainMembers(ctx context.Context) {
	servers, err := mb.servers()
	if err != nil {
		return
	}
	meta := mb.metadata()
	if me := mb.joinRequest(); !meta[me.ID].Same(me.member()) || me.ChangeAddress {
		if err := mb.addMember(ctx, me); err != nil && ctx.Err() == nil {
			mb.logger.Warn("registering own metadata failed", "error", err)
		}
	}
	in := map[string]bool{}
	for _, s := range servers {
		in[string(s.ID)] = true
	}
	for id := range meta {
		if !in[id] {
			if err := mb.pruneMetadata(ctx); err != nil && ctx.Err() == nil {
				mb.logger.Warn("removing the metadata of former members failed", "error", err)
			}
			return
		}
	}
}
