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
	return n.cmds.Query(ctx, q)
}

// Query is Node.Query.
func (cp *commands) Query(ctx context.Context, q fsm.Query) ([]byte, error) {
	if err := cp.stoppedErr(); err != nil {
		return nil, err
	}
	p, _ := fsm.PrincipalFrom(ctx)
	if q.Stale {
		return cp.fsm.Query(p, q)
	}
	var out []byte
	err := cp.viaLeader(ctx, "linearizable read",
		func(ctx context.Context) (err error) {
			if err = cp.host.linearize(ctx); err != nil {
				return err
			}
			out, err = cp.fsm.Query(p, q)
			return err
		},
		func(ctx context.Context, api string) (err error) {
			cp.metrics.forwardedRead.Inc()
			out, err = cp.forwardQuery(ctx, api, q, p)
			return err
		})
	return out, err
}

// linearize makes the local state at least as new as every write
// acknowledged before it was called: this node must have committed an entry
// in its current term (so its commit index is the cluster's), still be the
// leader by a quorum's word after the read began, and have applied the
// commit index it saw at the start. Concurrent reads share one
// confirmation that started after all of them (leaderConfirmer).
func (h *raftHost) linearize(ctx context.Context) error {
	start := time.Now()
	if h.readyTerm.Load() != h.raft.CurrentTerm() {
		return errs.New(errs.CodeUnavailable, "leader has not yet committed an entry in its term")
	}
	readIndex := h.raft.CommitIndex()
	if err := h.confirmer.confirm(ctx); err != nil {
		return errs.Errorf(errs.CodeUnavailable, "leadership not confirmed: %v", err)
	}
	if err := h.fsm.WaitApplied(ctx, readIndex); err != nil {
		return err
	}
	h.metrics.readLatency.Observe(time.Since(start).Seconds())
	return nil
}

var _ fsm.EffectReporter = (*Node)(nil)

// EffectState waits until this node has run the effects of every entry up
// to index and reports what key's last effect did here (fsm.EffectReporter):
// a service that serves a request on this node tells its caller, say,
// whether this node wrote the file its command asked for.
func (n *Node) EffectState(ctx context.Context, key string, index uint64) (*fsm.EffectState, error) {
	return n.fsm.EffectState(ctx, key, index)
}

// FailingEffects lists this node's failing keyed effects whose key starts
// with prefix (fsm.EffectReporter).
func (n *Node) FailingEffects(prefix string) []fsm.EffectState { return n.fsm.FailingEffects(prefix) }
