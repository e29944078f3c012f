package fsm

import (
	"runtime/debug"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/log"
	memdb "github.com/hashicorp/go-memdb"
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
// or panics, the shared transaction is thrown away and the batch applied
// again with one transaction per command, where a failure aborts only its
// own command. Both paths give the same state and the same responses.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	out, ok := f.applyShared(logs)
	if !ok {
		out = f.applyEach(logs)
	}
	if n := len(logs); n > 0 {
		f.applied.Store(logs[n-1].Index)
		f.broadcast()
	}
	return out
}

// applyShared applies logs in one transaction; ok is false (and nothing is
// committed) if any command left writes behind a failure.
func (f *FSM) applyShared(logs []*raft.Log) (out []any, ok bool) {
	txn := f.db.Load().Txn(true)
	m := readMeta(txn)
	out = make([]any, len(logs))
	for i, l := range logs {
		m.Index = l.Index
		if l.Type != raft.LogCommand {
			continue
		}
		res, clean := f.applyCommand(txn, m, l.Index, l.Data)
		if !clean {
			txn.Abort()
			return nil, false
		}
		out[i] = res
	}
	writeMeta(txn, m)
	txn.Commit()
	return out, true
}

// applyEach applies logs one transaction each.
func (f *FSM) applyEach(logs []*raft.Log) []any {
	db := f.db.Load()
	out := make([]any, len(logs))
	for i, l := range logs {
		txn := db.Txn(true)
		m := readMeta(txn)
		m.Index = l.Index
		if l.Type == raft.LogCommand {
			res, clean := f.applyCommand(txn, m, l.Index, l.Data)
			if !clean {
				// Nothing the failed command wrote survives; only the
				// index and the clock move.
				txn.Abort()
				txn = db.Txn(true)
				now := m.Now
				m = readMeta(txn)
				m.Index, m.Now = l.Index, now
			}
			out[i] = res
		}
		writeMeta(txn, m)
		txn.Commit()
	}
	return out
}

// applyCommand decodes, checks and dispatches one command inside txn,
// updating m. clean is false when the command failed after writing (or
// panicked): the caller must then discard txn.
func (f *FSM) applyCommand(txn *memdb.Txn, m *meta, index uint64, data []byte) (res *Response, clean bool) {
	refuse := func(e *errs.Error) (*Response, bool) {
		return &Response{Index: index, Time: m.Now, Err: e}, true
	}
	cmd, err := log.Decode(data)
	if err != nil {
		return refuse(errs.Errorf(errs.CodeInvalid, "undecodable command: %v", err))
	}
	spec := f.commands[cmd.Type]
	if spec == nil {
		return refuse(errs.Errorf(errs.CodeInvalid, "unknown command type %d", cmd.Type))
	}
	if cmd.Version < 1 || cmd.Version > spec.MaxVersion {
		return refuse(errs.Errorf(errs.CodeInvalid, "%s: unsupported version %d (max %d)", spec.Name, cmd.Version, spec.MaxVersion))
	}
	m.Now = max(m.Now, cmd.Stamp)
	if cmd.IdemKey != "" {
		if res, done := f.consultLedger(txn, &cmd, m); done {
			return res, true
		}
	}

	tx := &Tx{Now: m.Now, Index: index, Principal: cmd.Principal, Adapter: cmd.Adapter, txn: txn, meta: m}
	fail := func(e *errs.Error) (*Response, bool) {
		return &Response{Index: index, Time: m.Now, Err: e}, !tx.wrote
	}
	result, herr, panicked := f.dispatch(spec, tx, &cmd)
	if panicked {
		return &Response{Index: index, Time: m.Now, Err: herr}, false
	}
	if herr != nil {
		return fail(herr)
	}
	body, err := log.Marshal(result)
	if err != nil {
		return fail(errs.Errorf(errs.CodeInternal, "%s: encode result: %v", spec.Name, err))
	}
	res = &Response{Index: index, Time: m.Now, Result: body}
	if err := appendEvents(txn, m, tx.events); err != nil {
		return &Response{Index: index, Time: m.Now, Err: errs.Errorf(errs.CodeInternal, "%s: change feed: %v", spec.Name, err)}, false
	}
	if cmd.IdemKey != "" && !tx.refused {
		if err := recordLedger(txn, &cmd, m.Now, res); err != nil {
			return &Response{Index: index, Time: m.Now, Err: errs.Errorf(errs.CodeInternal, "%s: idempotency ledger: %v", spec.Name, err)}, false
		}
	}
	return res, true
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
