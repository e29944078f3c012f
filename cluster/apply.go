package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// The leader's apply: a command is stamped with FSM time and handed to
// raft (startApply), and its outcome waited for and classified
// (finishApply). Every write ends here: a client's (commands, and
// forwarded batches), and the cluster's own (ticks, members, the enabled
// set).

// applyLocal stamps and applies cmd on this node, which must be the leader.
func (h *raftHost) applyLocal(ctx context.Context, cmd arblog.Command) (*fsm.Response, error) {
	return h.finishApply(ctx, h.startApply(ctx, cmd))
}

// pendingApply is a command handed to raft whose outcome is not known yet.
type pendingApply struct {
	future raft.ApplyFuture
	start  time.Time
	err    error // set if the command never reached raft
}

// startApply stamps cmd with FSM time by this leader's monotonic clock
// (see fsmClock) and hands it to raft
// without waiting, so that a batch of forwarded commands can share a
// group commit.
func (h *raftHost) startApply(ctx context.Context, cmd arblog.Command) pendingApply {
	if fsm.Gated(cmd.Type, cmd.Version) {
		if enabled, gated := h.fsm.Enabled(); !gated || !enabled.Allows(cmd.Type, cmd.Version) {
			return pendingApply{err: errNotEnabled(cmd)}
		}
	}
	if !h.clock.read() {
		// A leader elected soon after it started may not have applied its
		// log yet: stamping now would take its wall clock, hours off
		// perhaps, as FSM time (TestFaults/reservation, clock-skew-leader
		// right after stop-restart-leader). The barrier applies
		// everything before it; only a cluster whose log holds no command
		// at all still stamps from the wall clock, as its first entry must.
		// Waited for with ctx: raft answers a barrier it has queued only
		// while it runs, and a node stopping (its ctx cancelled, then raft
		// shut down) must not wait for it forever (a Shutdown hung in
		// TestDocumentListsEveryRoute, a node stopped while its first
		// tick ran).
		bctx, cancel := context.WithTimeout(ctx, h.cfg.ApplyTimeout)
		err := waitFuture(bctx, h.raft.Barrier(h.cfg.ApplyTimeout))
		cancel()
		if err != nil {
			// Nothing was proposed: the command certainly did not apply.
			return pendingApply{err: errs.Errorf(errs.CodeUnavailable, "not applied: the leader could not apply its log first: %v", err)}
		}
	}
	cmd.Stamp = h.clock.stamp()
	data, err := arblog.Encode(cmd)
	if err != nil {
		return pendingApply{err: errs.Errorf(errs.CodeInvalid, "encode command: %v", err)}
	}
	enqueue := h.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		enqueue = time.Until(dl)
	}
	if enqueue <= 0 {
		return pendingApply{err: errs.New(errs.CodeUnavailable, "deadline passed before the command was proposed")}
	}
	return pendingApply{future: h.raft.Apply(data, enqueue), start: time.Now()}
}

// finishApply waits for a started command and classifies its outcome.
func (h *raftHost) finishApply(ctx context.Context, p pendingApply) (*fsm.Response, error) {
	if p.err != nil {
		return nil, p.err
	}
	err := waitFuture(ctx, p.future)
	if err != nil {
		return nil, applyError(err)
	}
	h.metrics.applyLatency.Observe(time.Since(p.start).Seconds())
	res, ok := p.future.Response().(*fsm.Response)
	if !ok {
		return nil, errs.Errorf(errs.CodeInternal, "FSM returned %T", p.future.Response())
	}
	return res, nil
}

// applyError classifies the error of a raft Apply future. Only errors
// raft returns before the entry is in the leader's log say it was not
// applied: ErrNotLeader, ErrEnqueueTimeout and
// ErrLeadershipTransferInProgress (raft v1.7.3 refuses new entries while
// it hands leadership over, raft.go leaderLoop). Those are retryable, so
// a write during a leadership transfer goes to the next leader instead
// of failing with an unknown outcome. Everything else, once the entry may
// be in the log, is an unknown outcome.
func applyError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return errs.Errorf(errs.CodeUnavailable, "not applied: %v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return errs.Unknown("gave up waiting for the command to commit: %v", err)
	default: // leadership lost, shutdown, aborted by restore
		return errs.Unknown("command may or may not be applied: %v", err)
	}
}
