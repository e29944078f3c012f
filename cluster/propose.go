package cluster

import (
	"context"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/rawwire"
	arblog "github.com/arbiterhq/arbiter/log"
)

// Propose submits cmd to the log as the principal on ctx, through the
// leader, and returns its result. See the package doc for what an error
// means about the command's outcome.
func (n *Node) Propose(ctx context.Context, cmd arblog.Command) (*fsm.Response, error) {
	return n.cmds.Propose(ctx, cmd)
}

// Propose is Node.Propose.
func (cp *commands) Propose(ctx context.Context, cmd arblog.Command) (*fsm.Response, error) {
	if err := cp.stoppedErr(); err != nil {
		return nil, err
	}
	if cp.fsm.IsInternal(cmd.Type) {
		return nil, errs.Errorf(errs.CodeForbidden, "command type %d is internal to the cluster", cmd.Type)
	}
	cmd.Principal, _ = fsm.PrincipalFrom(ctx)
	ctx, cancel := cp.withTimeout(ctx)
	defer cancel()
	if err := cp.gate(ctx, cmd); err != nil {
		return nil, err
	}
	began := time.Now()
	res, err := cp.propose(ctx, cmd)
	cp.metrics.observeCommand(cp.fsm, cmd.Type, time.Since(began), res, err)
	return res, errs.AdviseRetry(err, cmd.IdemKey)
}

// propose applies cmd on the leader, from wherever it is called, retrying
// while the command is known not to have been applied.
func (cp *commands) propose(ctx context.Context, cmd arblog.Command) (res *fsm.Response, err error) {
	err = cp.viaLeader(ctx, "command",
		func(ctx context.Context) (err error) {
			res, err = cp.host.applyLocal(ctx, cmd)
			return err
		},
		func(ctx context.Context, api string) (err error) {
			cp.metrics.forwarded.Inc()
			res, err = cp.forwarder.submit(ctx, api, cmd)
			return err
		})
	return res, err
}

// viaLeader runs onLeader when this node leads, else toLeader with the
// leader's API address, and tries again (with backoff, until ctx or
// ApplyTimeout ends) for as long as an attempt certainly did nothing: no
// leader known, or a leader that turned out not to be one.
func (cp *commands) viaLeader(ctx context.Context, what string, onLeader func(context.Context) error, toLeader func(context.Context, string) error) error {
	if cp.raft == nil {
		return errs.New(errs.CodeUnavailable, "node is not started")
	}
	ctx, cancel := cp.withTimeout(ctx)
	defer cancel()
	for attempt := 0; ; attempt++ {
		if err := cp.stoppedErr(); err != nil {
			return err
		}
		var err error
		if cp.isLeader() {
			err = onLeader(ctx)
		} else if id, api := cp.leaderAPI(); api != "" {
			err = toLeader(ctx, api)
		} else if id != "" {
			err = errs.Errorf(errs.CodeUnavailable, "leader %s has no known API address yet", id)
		} else {
			err = errs.New(errs.CodeUnavailable, "no known leader")
		}
		if !retryable(err) {
			return err
		}
		if cp.sleep(ctx, backoff(attempt)) != nil {
			if stopped := cp.stoppedErr(); stopped != nil {
				return stopped
			}
			return errs.Errorf(errs.CodeUnavailable, "%s not done before the deadline: %v", what, err)
		}
	}
}

// retryable reports whether err says the command was certainly not applied
// and another attempt (perhaps on another leader) is safe.
func retryable(err error) bool { return rawwire.Retryable(err) }

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
