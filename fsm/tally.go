package fsm

import (
	"sync"
	"sync/atomic"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/log"
)

// Applied-command counts, by command type and outcome, on every replica:
// what a command-level dashboard and alert read (arbiter_commands_total).
// They count what committed, once: a shared transaction that is thrown
// away and applied again command by command is counted when it commits.
// The label sets are bounded: types are those this binary registers (an
// unknown one is type 0), outcomes the closed set of codes and "ok".

type tallyKey struct {
	typ     log.Type
	outcome errs.Code // "" for success
}

type tallies struct{ m sync.Map } // tallyKey → *atomic.Uint64

// tally counts the responses of entries that just committed: out holds
// one per entry (nil for an entry that is not a command), types the
// types of the commands among them, in order.
func (f *FSM) tally(out []any, types []log.Type) {
	next := 0
	for _, r := range out {
		res, ok := r.(*Response)
		if !ok || res == nil || next >= len(types) {
			continue
		}
		k := tallyKey{typ: types[next]}
		next++
		if f.commands[k.typ] == nil {
			k.typ = 0
		}
		if res.Err != nil {
			k.outcome = res.Err.Code
			if !errs.Known(k.outcome) {
				k.outcome = errs.CodeInternal
			}
		}
		c, ok := f.tallies.m.Load(k)
		if !ok {
			c, _ = f.tallies.m.LoadOrStore(k, new(atomic.Uint64))
		}
		c.(*atomic.Uint64).Add(1)
	}
}

// AppliedCommand is one count of CommandCounts.
type AppliedCommand struct {
	Module, Command string // "" and "unknown" for an unknown type
	Outcome         string // "ok" or an error code
	Count           uint64
}

// CommandCounts lists how many commands this replica applied since it
// started, by module, command and outcome.
func (f *FSM) CommandCounts() []AppliedCommand {
	var out []AppliedCommand
	f.tallies.m.Range(func(k, v any) bool {
		key := k.(tallyKey)
		c := AppliedCommand{Module: f.commandModule[key.typ], Command: "unknown", Outcome: "ok", Count: v.(*atomic.Uint64).Load()}
		if spec := f.commands[key.typ]; spec != nil {
			c.Command = spec.Name
		}
		if key.outcome != "" {
			c.Outcome = string(key.outcome)
		}
		out = append(out, c)
		return true
	})
	return out
}

// CommandName is the module and name of command type t ("", "" if this
// binary does not know it).
func (f *FSM) CommandName(t log.Type) (module, name string) {
	if spec := f.commands[t]; spec != nil {
		return f.commandModule[t], spec.Name
	}
	return "", ""
}
