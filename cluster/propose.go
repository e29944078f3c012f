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

// Propose submits cmd to the log as the principal on ctx, through the
// leader, and returns its result. See the package doc for what an error
// means about the command's outcome.
func (n *Node) Propose(ctx context.Context, cmd arblog.Command) (*fsm.Response, error) {
	if err := n.stoppedErr(); err != nil {
		return nil, err
	}
	if n.fsm.IsInternal(cmd.Type) {
		return nil, errs.Errorf(errs.CodeForbidden, "command type %d is internal to the cluster", cmd.Type)
	}
	cmd.Principal, _ = fsm.PrincipalFrom(ctx)
	ctx, cancel := n.withTimeout(ctx)
	defer cancel()
	if err := n.gate(ctx, cmd); err != nil {
		return nil, err
	}
	began := time.Now()
	res, err := n.propose(ctx, cmd)
	n.metrics.observeCommand(n, cmd.Type, time.Since(began), res, err)
	return res, errs.AdviseRetry(err, cmd.IdemKey)
}

// propose applies cmd on the leader, from wherever it is called, retrying
// while the command is known not to have been applied.
func (n *Node) propose(ctx context.Context, cmd arblog.Command) (res *fsm.Response, err error) {
	err = n.viaLeader(ctx, "command",
		func(ctx context.Context) (err error) {
			res, err = n.applyLocal(ctx, cmd)
			return err
		},
		func(ctx context.Context, api string) (err error) {
			n.metrics.forwarded.Inc()
			res, err = n.forwarder.submit(ctx, api, cmd)
			return err
		})
	return res, err
}

// viaLeader runs onLeader when this node leads, else toLeader with the
// leader's API address, and tries again (with backoff, until ctx or
// ApplyTimeout ends) for as long as an attempt certainly did nothing: no
// leader known, or a leader that turned out not to be one.
func (n *Node) viaLeader(ctx context.Context, what string, onLeader func(context.Context) error, toLeader func(context.Context, string) error) error {
	if n.raft == nil {
		return errs.New(errs.CodeUnavailable, "node is not started")
	}
	ctx, cancel := n.withTimeout(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		if err := n.stoppedErr(); err != nil {
			return err
		}
		var err error
		if n.IsLeader() {
			err = onLeader(ctx)
		} else if id, api := n.leaderAPI(); api != "" {
			err = toLeader(ctx, api)
		} else if id != "" {
			err = errs.Errorf(errs.CodeUnavailable, "leader %s has no known API address yet", id)
		} else {
			err = errs.New(errs.CodeUnavailable, "no known leader")
		}
		if !retryable(err) {
			return err
		}
		if n.sleep(ctx, backoff(attempt)) != nil {
			if stopped := n.stoppedErr(); stopped != nil {
				return stopped
			}
			return errs.Errorf(errs.CodeUnavailable, "%s not done before the deadline: %v", what, err)
		}
	}
}

// stoppedErr is the error of every call on a node that has stopped (or is
// stopping): at once, naming this node rather than the cluster, and never
// an unknown outcome, since nothing was handed to raft. nil while it runs.
func (n *Node) stoppedErr() error {
	if n.ctx.Err() == nil {
		return nil
	}
	why := "it was shut down or closed"
	if err := n.Err(); err != nil {
		why = err.Error()
	}
	return errs.Errorf(errs.CodeUnavailable, "node %s is stopped (%s): ask another member, or this node once restarted", n.cfg.ID, why)
}

// applyLocal stamps and applies cmd on this node, which must be the leader.
func (n *Node) applyLocal(ctx context.Context, cmd arblog.Command) (*fsm.Response, error) {
	return n.finishApply(ctx, n.startApply(ctx, cmd))
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
func (n *Node) startApply(ctx context.Context, cmd arblog.Command) pendingApply {
	if fsm.Gated(cmd.Type, cmd.Version) {
		if enabled, gated := n.fsm.Enabled(); !gated || !enabled.Allows(cmd.Type, cmd.Version) {
			return pendingApply{err: errNotEnabled(cmd)}
		}
	}
	if !n.clock.read() {
		// A leader elected soon after it started may not have applied its
		// log yet: stamping now would take its wall clock, hours off
		// perhaps, as FSM time (TestFaults/reservation, clock-skew-leader
		// right after stop-restart-leader). The barrier applies
		// everything before it; only a cluster whose log holds no command
		// at all still stamps from the wall clock, as its first entry must.
		if err := n.raft.Barrier(n.cfg.ApplyTimeout).Error(); err != nil {
			// Nothing was proposed: the command certainly did not apply.
			return pendingApply{err: errs.Errorf(errs.CodeUnavailable, "not applied: the leader could not apply its log first: %v", err)}
		}
	}
	cmd.Stamp = n.clock.stamp()
	data, err := arblog.Encode(cmd)
	if err != nil {
		return pendingApply{err: errs.Errorf(errs.CodeInvalid, "encode command: %v", err)}
	}
	enqueue := n.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		enqueue = time.Until(dl)
	}
	if enqueue <= 0 {
		return pendingApply{err: errs.New(errs.CodeUnavailable, "deadline passed before the command was proposed")}
	}
	return pendingApply{future: n.raft.Apply(data, enqueue), start: time.Now()}
}

// finishApply waits for a started command and classifies its outcome.
func (n *Node) finishApply(ctx context.Context, p pendingApply) (*fsm.Response, error) {
	if p.err != nil {
		return nil, p.err
	}
	err := waitFuture(ctx, p.future)
	if err != nil {
		return nil, applyError(err)
	}
	n.metrics.applyLatency.Observe(time.Since(p.start).Seconds())
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

// retryable reports whether err says the command was certainly not applied
// and another attempt (perhaps on another leader) is safe.
func retryable(err error) bool {
	if err == nil {
		return false // and no allocation for errors.As's target
	}
	var e *errs.Error
	return errors.As(err, &e) && e.Code == errs.CodeUnavailable && !e.OutcomeUnknown
}

// withTimeout bounds ctx by ApplyTimeout when it has no deadline. A ctx
// with a deadline is returned as it is, with a cancel func that does
// nothing: a write passes through up to three of these (handler, Propose,
// viaLeader), and each context layer costs a timer or a registration with
// its parent on every request. Nothing started under the returned ctx
// outlives the call that made it: a forwarded call that gave up is left
// in its batch only while its ctx is done, which take skips.
func (n *Node) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, n.cfg.ApplyTimeout)
}

// backoff grows from 10ms to 500ms.
func backoff(attempt int) time.Duration {
	d := 10 * time.Millisecond << min(attempt, 6)
	return min(d, 500*time.Millisecond)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sleep is sleepCtx that also ends when the node stops.
func (n *Node) sleep(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(n.ctx, cancel)()
	return sleepCtx(ctx, d)
}
