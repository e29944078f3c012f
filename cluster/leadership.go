package cluster

import (
	"context"
	"time"

	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
)

// watchLeadership runs the leader's duties while this node leads: commit a
// Tick at the start of each term (which makes linearizable reads safe and
// settles the FSM clock), register its own metadata, then tick
// periodically.
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
		if _, err := n.tick(ctx); err == nil {
			break
		} else if sleepCtx(ctx, backoff(attempt)) != nil {
			return
		}
	}
	if ctx.Err() == nil && n.IsLeader() && n.raft.CurrentTerm() == term {
		n.readyTerm.Store(term)
	}
	if err := n.ensureMember(ctx, n.joinRequest().member()); err != nil && ctx.Err() == nil {
		n.logger.Warn("registering own metadata failed", "error", err)
	}
	t := time.NewTicker(n.cfg.TickInterval)
	defer t.Stop()
	for {
		if err := n.settleCapabilities(ctx); err != nil && ctx.Err() == nil {
			n.logger.Warn("settling the enabled command set failed", "error", err)
		}
		select {
		case <-t.C:
			if h := n.fsm.Halted(); h != nil {
				n.stepDownHalted(h)
				continue
			}
			if _, err := n.tick(ctx); err != nil && ctx.Err() == nil {
				n.logger.Warn("tick failed", "error", err)
			}
		case <-ctx.Done():
			return
		}
	}
}

// tick proposes one Tick on this node, which must be the leader.
func (n *Node) tick(ctx context.Context) (*fsm.Response, error) {
	payload := arblog.MustMarshal(fsm.Tick{
		IdemRetentionMs: n.cfg.IdempotencyRetention.Milliseconds(),
		FeedRetain:      n.cfg.ChangeFeedRetain,
		Budget:          n.cfg.TickBudget,
	})
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ApplyTimeout)
	defer cancel()
	res, err := n.applyLocal(ctx, arblog.Command{Type: fsm.CmdTick, Version: 1, Payload: payload})
	if err == nil && res.Err != nil {
		err = res.Err
	}
	return res, err
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
