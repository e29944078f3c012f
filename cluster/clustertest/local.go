package clustertest

import (
	"context"
	"time"

	"github.com/arbiterhq/arbiter/domain"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
)

// Local is one replica's state machine without raft or a network, for
// unit tests of service code: each command is applied at once, as the
// next log entry, stamped with a clock the test moves (Advance). It is an
// fsm.Proposer and an fsm.Reader, so a domain client or a service built
// on one runs over it unchanged, and deterministically: the same calls
// give the same indexes, fences and times every run.
type Local struct{ l *fsmtest.Local }

// Epoch is the clock a Local starts at: 2026-01-01T00:00:00Z in unix ms.
const Epoch = fsmtest.Epoch

// NewLocal returns a Local running the state of the given domains (as
// Options.Domains names them: nodes.Domain(), builtin.Domains()...).
func NewLocal(domains ...domain.Domain) (*Local, error) {
	l, err := fsmtest.New(domain.Modules(domains)...)
	if err != nil {
		return nil, err
	}
	return &Local{l: l}, nil
}

// Advance moves the clock forward; the state machine sees it on the next
// command.
func (l *Local) Advance(d time.Duration) { l.l.Advance(d) }

// Propose applies cmd as the next log entry.
func (l *Local) Propose(ctx context.Context, cmd log.Command) (*fsm.Response, error) {
	return l.l.Propose(ctx, cmd)
}

// Query reads the state.
func (l *Local) Query(ctx context.Context, q fsm.Query) ([]byte, error) { return l.l.Query(ctx, q) }

var (
	_ fsm.Proposer = (*Local)(nil)
	_ fsm.Reader   = (*Local)(nil)
)
