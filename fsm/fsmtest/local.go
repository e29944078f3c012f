package fsmtest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// Local applies commands to one FSM in the calling goroutine.
type Local struct {
	FSM *fsm.FSM

	mu    sync.Mutex
	index uint64
	now   int64
	log   []*raft.Log
}

// Epoch is the clock a Local starts at: 2026-01-01T00:00:00Z in unix ms.
const Epoch int64 = 1767225600000

// New returns a Local over a fresh FSM with the given modules.
func New(modules ...fsm.Module) (*Local, error) {
	f, err := fsm.New(fsm.Config{Modules: modules})
	if err != nil {
		return nil, err
	}
	return &Local{FSM: f, now: Epoch}, nil
}

// Advance moves the proposer's clock forward; the FSM sees it on the next
// command's stamp.
func (l *Local) Advance(d time.Duration) {
	l.mu.Lock()
	l.now += d.Milliseconds()
	l.mu.Unlock()
}

// SetClock sets the proposer's clock (it may go backwards: the FSM clock
// must not).
func (l *Local) SetClock(ms int64) {
	l.mu.Lock()
	l.now = ms
	l.mu.Unlock()
}

// Propose stamps, encodes and applies cmd as the next log entry.
func (l *Local) Propose(ctx context.Context, cmd log.Command) (*fsm.Response, error) {
	if p, ok := fsm.PrincipalFrom(ctx); ok {
		cmd.Principal = p
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cmd.Stamp = l.now
	data, err := log.Encode(cmd)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "encode command: %v", err)
	}
	return l.applyLocked(data), nil
}

// ApplyRaw applies arbitrary bytes as the next log entry.
func (l *Local) ApplyRaw(data []byte) *fsm.Response {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.applyLocked(data)
}

func (l *Local) applyLocked(data []byte) *fsm.Response {
	l.index++
	entry := &raft.Log{Index: l.index, Term: 1, Type: raft.LogCommand, Data: data}
	l.log = append(l.log, entry)
	res, _ := l.FSM.Apply(entry).(*fsm.Response)
	return res
}

// Query reads the FSM's current state.
func (l *Local) Query(ctx context.Context, q fsm.Query) ([]byte, error) {
	p, _ := fsm.PrincipalFrom(ctx)
	return l.FSM.Query(p, q)
}

// Log returns the entries applied so far.
func (l *Local) Log() []*raft.Log {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*raft.Log{}, l.log...)
}

// ForgetLog drops the entries kept so far (Log then returns only later
// ones): a measure of the state's memory must not count the test's copy
// of the log.
func (l *Local) ForgetLog() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = nil
}

var (
	_ fsm.Proposer = (*Local)(nil)
	_ fsm.Reader   = (*Local)(nil)
)

// Enable proposes CmdEnable with set, as a cluster's leader does once its
// members serve it: the state becomes gated, and commands follow the
// versions set names (fsm.Capabilities).
func (l *Local) Enable(set fsm.Capabilities) error {
	res, err := l.Propose(context.Background(), log.Command{Type: fsm.CmdEnable, Version: 1, Payload: log.MustMarshal(set)})
	if err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	return nil
}

// AtVersion is set with every command of the named domain at version v
// at most: what a cluster enables while a member still runs a release
// whose domain serves only v (a command set names below v stays as it
// is: no release serves a version its binary does not know).
func AtVersion(set fsm.Capabilities, domain string, v uint16) fsm.Capabilities {
	out := fsm.Capabilities{Domains: slices.Clone(set.Domains)}
	for i := range out.Domains {
		if out.Domains[i].Name == domain {
			out.Domains[i].Commands = slices.Clone(out.Domains[i].Commands)
			for j := range out.Domains[i].Commands {
				out.Domains[i].Commands[j].Version = min(out.Domains[i].Commands[j].Version, v)
			}
		}
	}
	return out
}
