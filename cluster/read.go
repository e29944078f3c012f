package cluster

import (
	"context"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// Query answers q as the principal on ctx. Linearizable queries are
// served by the leader (forwarded from followers); stale ones locally.
func (n *Node) Query(ctx context.Context, q fsm.Query) ([]byte, error) {
	p, _ := fsm.PrincipalFrom(ctx)
	if q.Stale {
		return n.fsm.Query(p, q)
	}
	if n.raft == nil {
		return nil, errs.New(errs.CodeUnavailable, "node is not started")
	}
	ctx, cancel := n.withTimeout(ctx)
	defer cancel()
	var last error
	for attempt := 0; ; attempt++ {
		var out []byte
		var err error
		if n.IsLeader() {
			if err = n.linearize(ctx); err == nil {
				return n.fsm.Query(p, q)
			}
		} else if id, api := n.leaderAPI(); api != "" {
			n.metrics.forwardedRead.Inc()
			out, err = n.forwardQuery(ctx, api, q, p)
		} else if id != "" {
			err = errs.Errorf(errs.CodeUnavailable, "leader %s has no known API address yet", id)
		} else {
			err = errs.New(errs.CodeUnavailable, "no known leader")
		}
		if !retryable(err) {
			return out, err
		}
		last = err
		if sleepCtx(ctx, backoff(attempt)) != nil {
			return nil, errs.Errorf(errs.CodeUnavailable, "no linearizable read before the deadline: %v", last)
		}
	}
}

// linearize makes the local state at least as new as every write
// acknowledged before it was called: this node must have committed an entry
// in its current term (so its commit index is the cluster's), still be the
// leader by a quorum's word after the read began, and have applied the
// commit index it saw at the start.
func (n *Node) linearize(ctx context.Context) error {
	start := time.Now()
	if n.readyTerm.Load() != n.raft.CurrentTerm() {
		return errs.New(errs.CodeUnavailable, "leader has not yet committed an entry in its term")
	}
	readIndex := n.raft.CommitIndex()
	if err := waitFuture(ctx, n.raft.VerifyLeader()); err != nil {
		return errs.Errorf(errs.CodeUnavailable, "leadership not confirmed: %v", err)
	}
	if err := n.fsm.WaitApplied(ctx, readIndex); err != nil {
		return err
	}
	n.metrics.readLatency.Observe(time.Since(start).Seconds())
	return nil
}
