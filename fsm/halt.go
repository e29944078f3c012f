package fsm

import (
	"fmt"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// Halt says why a replica stopped applying: the log holds a command the
// cluster has enabled and this replica's binary does not understand (it
// lacks the domain, or serves an older version). Answering it in any way
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
}

func (h *Halt) String() string {
	return fmt.Sprintf("entry %d is %s.%s (type %d) version %d, enabled in this cluster but not served by this binary",
		h.Index, h.Domain, h.Command, h.Type, h.Version)
}

func (h *Halt) err() *errs.Error {
	return errs.Unknown("replica halted: %s", h)
}

// Halted is why this replica stopped applying, or nil while it applies.
func (f *FSM) Halted() *Halt { return f.halted.Load() }

func (f *FSM) halt(index uint64, cmd *log.Command, enabled *Capabilities) {
	h := &Halt{Index: index, Type: cmd.Type, Version: cmd.Version}
	if l, ok := enabled.lookup(cmd.Type); ok {
		h.Domain, h.Command = l.domain, l.cmd.Name
	}
	f.halted.Store(h)
	f.logger.Error("replica halted: the log holds an enabled command this binary cannot apply; it applies nothing more until it runs a binary that serves it",
		"index", index, "domain", h.Domain, "command", h.Command, "type", h.Type, "version", h.Version)
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
