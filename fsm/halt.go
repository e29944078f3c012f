package fsm

import (
	"fmt"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// Halt says why a replica stopped applying: the log holds a command the
// cluster has enabled and this replica's binary does not understand (it
// lacks the domain, or serves an older version), or the cluster enables
// a version of a command this binary serves only at an older one, and
// such a version may change how any entry applies (see haltBehind).
// Answering it in any way
// would make this replica differ from its peers, so it applies nothing
// more: its state, applied index and clock stay as they were before that
// entry, it takes no snapshot (one would claim entries it never applied),
// and it answers every command and query with unavailable. A replica that
// is restarted with a binary that serves the command replays the log from
// its last snapshot and goes on; one that installs a snapshot from the
// leader goes on from there.
type Halt struct {
	// Index is the entry the replica could not apply.
	Index uint64 `json:"index"`
	// Type and Version are that command's; Domain and Command name it as
	// the enabled set does.
	Type    log.Type `json:"type"`
	Version uint16   `json:"version"`
	Domain  string   `json:"domain"`
	Command string   `json:"command"`
	// Served, when set, is the newest version of that command this
	// binary serves: the entry at Index is another command, which the
	// enabled version may change (haltBehind).
	Served uint16 `json:"served,omitempty"`
}

func (h *Halt) String() string {
	if h.Served > 0 {
		return fmt.Sprintf("entry %d not applied: this cluster enables %s.%s (type %d) version %d and this binary serves it only to version %d; a version may change how other commands apply (a member restarted with an older binary)",
			h.Index, h.Domain, h.Command, h.Type, h.Version, h.Served)
	}
	return fmt.Sprintf("entry %d is %s.%s (type %d) version %d, enabled in this cluster but not served by this binary",
		h.Index, h.Domain, h.Command, h.Type, h.Version)
}

func (h *Halt) err() *errs.Error {
	return errs.Unknown("replica halted: %s", h)
}

// Halted is why this replica stopped applying, or nil while it applies.
func (f *FSM) Halted() *Halt { return f.halted.Load() }

func (f *FSM) halt(index uint64, cmd *log.Command, enabled *Capabilities) {
	f.haltWith(&Halt{Index: index, Type: cmd.Type, Version: cmd.Version}, enabled)
}

// haltWith names h's command as the enabled set does, and halts.
func (f *FSM) haltWith(h *Halt, enabled *Capabilities) {
	if l, ok := enabled.lookup(h.Type); ok {
		h.Domain, h.Command = l.domain, l.cmd.Name
	}
	f.halted.Store(h)
	f.logger.Error("replica halted: it applies nothing more until it runs a binary that serves the command the reason names",
		"reason", h.String(), "index", h.Index, "domain", h.Domain, "command", h.Command, "type", h.Type, "version", h.Version, "served", h.Served)
}

// haltedResponses answers entries a halted replica will not apply. The
// outcome is unknown to a caller: the other replicas may apply them.
func (f *FSM) haltedResponses(logs []*raft.Log) []any {
	e := f.halted.Load().err()
	out := make([]any, len(logs))
	for i, l := range logs {
		out[i] = &Response{Index: l.Index, Err: e}
	}
	return out
}

// behind returns a command the enabled set e names at a version above the
// one this binary serves, if any: domains this binary lacks are not
// counted (their commands halt where they appear). A version's semantics
// may reach other commands (principal_put 2 checks every command's
// principal in Apply; tick 3 counts the ledger's bytes on every keyed
// write), so a replica that cannot apply that version must not apply any
// entry its peers applied under it: a member restarted on its data with
// an older binary, which would otherwise diverge until it met a command
// of that version. The answer is kept for the set it was computed for
// (the set changes only with CmdEnable or a restore); the FSM's apply
// goroutine alone calls it.
func (f *FSM) behind(e *Capabilities) *CommandCap {
	if e == nil {
		return nil
	}
	if f.behindOf.set == e {
		return f.behindOf.cmd
	}
	f.behindOf.set, f.behindOf.cmd = e, nil
	for _, d := range e.Domains {
		for _, c := range d.Commands {
			if spec := f.commands[c.Type]; spec != nil && c.Version > spec.MaxVersion {
				f.behindOf.cmd = &CommandCap{Type: c.Type, Name: c.Name, Version: c.Version}
				return f.behindOf.cmd
			}
		}
	}
	return nil
}

// haltBehind halts at index because the enabled set names c beyond this
// binary (behind).
func (f *FSM) haltBehind(index uint64, c *CommandCap, enabled *Capabilities) {
	f.haltWith(&Halt{Index: index, Type: c.Type, Version: c.Version, Served: f.commands[c.Type].MaxVersion}, enabled)
}
