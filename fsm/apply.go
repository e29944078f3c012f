package fsm

import (
	"runtime/debug"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/statestore"
	"github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

// Apply applies one committed entry.
func (f *FSM) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed entries in order.
//
// The batch normally shares one write transaction: one commit and one
// bookkeeping write for up to MaxAppendEntries commands, and readers see
// the batch all at once. Each command is still all-or-nothing because
// handlers validate before they write. If a command fails after writing,
// or panics, or halts the replica, the shared transaction is thrown away
// and the rest of the batch applied again with one transaction per
// command, where a failure aborts only its own command. Both paths give
// the same state and the same responses.
//
// A command that registers effects ends its shared transaction: the
// transaction commits right after it and its effects run before the next
// command is applied. So no later command (a takeover of what the effect
// writes, say) is applied, let alone committed, between a command's
// checks and its effects.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	if f.halted.Load() != nil {
		return f.haltedResponses(logs)
	}
	out := make([]any, len(logs))
	scratch := make([]applyScratch, len(logs))
	for start := 0; start < len(logs); {
		n, ok := f.applyShared(logs[start:], out[start:], scratch[start:])
		if !ok {
			copy(out[start:], f.applyEach(logs[start:]))
			return out
		}
		start += n
	}
	return out
}

// applyScratch is what applying one command keeps on the heap: the
// decoded command and the Tx (handlers take pointers to both), and the
// Response, which raft hands on to the proposer. ApplyBatch makes them for
// the whole batch at once, one allocation where each command took three
// (issue 42); the batch's entries stay alive together while any proposer
// holds one Response, at most MaxAppendEntries of them.
type applyScratch struct {
	cmd log.Command
	tx  Tx
	res Response
}

// outcome says what applying one command inside a transaction left.
type outcome int

const (
	// clean: the transaction may commit (the result may be an error that
	// wrote nothing).
	clean outcome = iota
	// dirty: the command failed after writing, or panicked; discard the
	// transaction.
	dirty
	// halt: the command is enabled but this binary cannot apply it;
	// discard the transaction and stop applying.
	halt
)

// applyShared applies a prefix of logs in one transaction: up to the first
// command that registers effects, or all of them. It commits, runs that
// command's effects and returns how many entries it applied (their
// responses in out). ok is false (and nothing is committed) unless every
// command of the prefix was clean.
func (f *FSM) applyShared(logs []*raft.Log, out []any, scratch []applyScratch) (n int, ok bool) {
	txn := f.db.Load().Txn(true)
	m := readMeta(txn)
	var effects []Effect
	var types []log.Type // of the commands applied, for tally
	for _, l := range logs {
		m.Index = l.Index
		n++
		if l.Type != raft.LogCommand {
			continue
		}
		res, eff, o, typ := f.applyCommand(txn, m, l.Index, l.Data, &scratch[n-1])
		types = append(types, typ)
		if o != clean {
			txn.Abort()
			clear(out[:n])
			return 0, false
		}
		out[n-1] = res
		if len(eff) > 0 {
			effects = eff
			break
		}
	}
	writeMeta(txn, m)
	txn.Commit()
	f.committed(m)
	f.tally(out[:n], types)
	f.runEffects(effects, logs[n-1].Index)
	f.advance(logs[n-1].Index)
	f.broadcast()
	return n, true
}

// applyEach applies logs one transaction each, running each command's
// effects after its own commit. It stops at a command that halts the
// replica: that one and every later entry stay unapplied.
func (f *FSM) applyEach(logs []*raft.Log) []any {
	db := f.db.Load()
	out := make([]any, len(logs))
	// Not applyShared's scratch: nothing of a discarded try is reused.
	scratch := make([]applyScratch, len(logs))
	var types []log.Type // of entry i's command, for tally
	for i, l := range logs {
		txn := db.Txn(true)
		m := readMeta(txn)
		m.Index = l.Index
		var effects []Effect
		types = types[:0]
		if l.Type == raft.LogCommand {
			res, eff, o, typ := f.applyCommand(txn, m, l.Index, l.Data, &scratch[i])
			types = append(types[:0], typ)
			switch o {
			case halt:
				txn.Abort()
				if i > 0 {
					f.advance(logs[i-1].Index)
				}
				f.broadcast()
				copy(out[i:], f.haltedResponses(logs[i:]))
				return out
			case dirty:
				// Nothing the failed command wrote survives; only the
				// index and the clock move.
				txn.Abort()
				txn = db.Txn(true)
				now := m.Now
				m = readMeta(txn)
				m.Index, m.Now = l.Index, now
			case clean:
				effects = eff
			}
			out[i] = res
		}
		writeMeta(txn, m)
		txn.Commit()
		f.committed(m)
		f.tally(out[i:i+1], types)
		f.runEffects(effects, l.Index)
		f.advance(l.Index)
	}
	f.broadcast()
	return out
}

// applyCommand decodes, checks and dispatches one command inside txn,
// updating m. It returns the response, the effects to run once txn has
// committed, whether txn may commit, and the command's type (for the
// applied-command counts, tally.go). sc is the command's own scratch,
// unused by any other command.
func (f *FSM) applyCommand(txn *statestore.Txn, m *meta, index uint64, data []byte, sc *applyScratch) (*Response, []Effect, outcome, log.Type) {
	// The payload shares the entry's bytes, which raft never changes:
	// handlers decode their values out of it and keep nothing of it.
	var err error
	sc.cmd, err = log.DecodeView(data)
	res, eff, o := f.applyDecoded(txn, m, index, sc, err)
	return res, eff, o, sc.cmd.Type
}

// applyDecoded is applyCommand once the entry is decoded into sc.cmd
// (err says whether it could be).
func (f *FSM) applyDecoded(txn *statestore.Txn, m *meta, index uint64, sc *applyScratch, err error) (*Response, []Effect, outcome) {
	cmd := &sc.cmd
	respond := func(r Response) *Response {
		sc.res = r
		return &sc.res
	}
	refuse := func(e *errs.Error) (*Response, []Effect, outcome) {
		return respond(Response{Index: index, Time: m.Now, Err: e}), nil, clean
	}
	if c := f.behind(m.Enabled); c != nil && (err != nil || cmd.Type != CmdEnable) {
		// An enabled-set change applies: it may lower the set to what
		// this binary serves. Anything else, an entry this binary cannot
		// decode too, was applied by the peers under a version this
		// binary cannot reproduce.
		f.haltBehind(index, c, m.Enabled)
		return nil, nil, halt
	}
	if err != nil {
		return refuse(errs.Errorf(errs.CodeInvalid, "undecodable command: %v", err))
	}
	if cmd.Version < 1 {
		return refuse(errs.Errorf(errs.CodeInvalid, "command type %d: version 0", cmd.Type))
	}
	spec := f.commands[cmd.Type]
	if m.Enabled != nil && !baseline(cmd.Type, cmd.Version) {
		// The enabled set decides, identically on every replica; only
		// then does this binary's own knowledge matter.
		if !m.Enabled.Allows(cmd.Type, cmd.Version) {
			return refuse(errs.Errorf(errs.CodeUnavailable, "command type %d version %d is not enabled in this cluster", cmd.Type, cmd.Version))
		}
		if spec == nil || cmd.Version > spec.MaxVersion {
			f.halt(index, cmd, m.Enabled)
			return nil, nil, halt
		}
	}
	if spec == nil {
		return refuse(errs.Errorf(errs.CodeInvalid, "unknown command type %d", cmd.Type))
	}
	if cmd.Version > spec.MaxVersion {
		return refuse(errs.Errorf(errs.CodeInvalid, "%s: unsupported version %d (max %d)", spec.Name, cmd.Version, spec.MaxVersion))
	}
	m.Now = max(m.Now, cmd.Stamp)
	sc.tx = Tx{Now: m.Now, Index: index, Principal: cmd.Principal, Adapter: cmd.Adapter, txn: txn, meta: m}
	tx := &sc.tx
	if !spec.Internal && !cmd.Principal.Trusted() {
		for _, a := range f.authorizers {
			if err := a.fn(tx); err != nil {
				return refuse(errs.From(err))
			}
		}
	}
	var ledgerKey string
	if cmd.IdemKey != "" {
		key, e := ledgerID(spec, cmd, m)
		if e != nil {
			return refuse(e)
		}
		// A principal's own request from before the switch to a
		// tenant-keyed ledger answers first (see LedgerLegacyScope).
		if legacy := legacyCommand(spec, cmd, m); legacy != nil {
			if res, done := f.consultLedger(txn, legacy, principalLedgerID(legacy), m); done {
				if e := ledgerRoleRefusal(spec, cmd); e != nil {
					return refuse(e)
				}
				return res, nil, clean
			}
		}
		if res, done := f.consultLedger(txn, cmd, key, m); done {
			if e := ledgerRoleRefusal(spec, cmd); e != nil {
				return refuse(e)
			}
			return res, nil, clean
		}
		ledgerKey = key
	}

	failed := func(e *errs.Error, o outcome) (*Response, []Effect, outcome) {
		return respond(Response{Index: index, Time: m.Now, Err: e}), nil, o
	}
	result, herr, panicked := f.dispatch(spec, tx, cmd)
	if panicked {
		return failed(herr, dirty)
	}
	if herr != nil {
		if tx.wrote {
			return failed(herr, dirty)
		}
		return failed(herr, clean)
	}
	body, err := log.Marshal(result)
	if err != nil {
		return failed(errs.Errorf(errs.CodeInternal, "%s: encode result: %v", spec.Name, err), dirtyIf(tx.wrote))
	}
	res := respond(Response{Index: index, Time: m.Now, Result: body})
	if err := appendEvents(txn, m, tx.events); err != nil {
		return failed(errs.Errorf(errs.CodeInternal, "%s: change feed: %v", spec.Name, err), dirty)
	}
	recorded := cmd.IdemKey != "" && !tx.refused
	if recorded {
		if err := recordLedger(txn, m, cmd, ledgerKey, res); err != nil {
			return failed(errs.Errorf(errs.CodeInternal, "%s: idempotency ledger: %v", spec.Name, err), dirty)
		}
	}
	keepUp(txn, m, len(tx.events), recorded)
	return res, tx.effects, clean
}

func dirtyIf(wrote bool) outcome {
	if wrote {
		return dirty
	}
	return clean
}

// dispatch runs a handler, turning a panic or a foreign error into an
// internal error result. A panic is a bug: it is logged with its stack and
// counted, and the caller discards the transaction.
func (f *FSM) dispatch(spec *CommandSpec, tx *Tx, cmd *log.Command) (result any, err *errs.Error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			f.panics.Add(1)
			f.logger.Error("command handler panicked", "command", spec.Name, "index", tx.Index, "panic", r, "stack", string(debug.Stack()))
			result, err, panicked = nil, errs.Errorf(errs.CodeInternal, "%s: handler failed", spec.Name), true
		}
	}()
	res, herr := spec.Apply(tx, cmd)
	if herr != nil {
		e := errs.From(herr)
		if e.Code == errs.CodeInternal {
			f.logger.Error("command handler failed", "command", spec.Name, "index", tx.Index, "error", herr)
		}
		return nil, e, false
	}
	return res, nil, false
}
