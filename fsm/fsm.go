package fsm

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/statestore"
	"github.com/arbiterhq/arbiter/log"
	memdb "github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
)

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// Config configures an FSM. Every replica of a cluster must be built with
// the same modules, or their states diverge.
type Config struct {
	// Modules are the domain modules; the core module (ticks, members,
	// the idempotency ledger and the change feed) is always included.
	Modules []Module
	Logger  *slog.Logger
}

// FSM is the replicated state machine. Apply, ApplyBatch, Snapshot and
// Restore are called by raft from one goroutine; Query, AppliedIndex,
// WaitApplied and StateHash may be called from any goroutine.
type FSM struct {
	logger   *slog.Logger
	schema   *memdb.DBSchema
	tables   []Table // sorted by name: the order of snapshots
	commands map[log.Type]*CommandSpec
	queries  map[QueryType]*QuerySpec
	// moduleOf names the module of each command and query type.
	commandModule map[log.Type]string
	queryModule   map[QueryType]string
	ticks         []moduleTick // sorted by module name
	restored      []moduleRestored
	authorizers   []moduleAuthorize     // sorted by module name
	readChecks    []moduleReadAuthorize // sorted by module name
	gauges        []moduleGauges        // sorted by module name
	eventValues   map[string]EventValue // by event kind
	served        Capabilities
	// behindOf memoizes behind (halt.go) for one enabled set; the apply
	// goroutine's alone.
	behindOf struct {
		set *Capabilities
		cmd *CommandCap
	}

	db      atomic.Pointer[statestore.DB]
	applied atomic.Uint64 // index of the last entry applied
	// now and enabled are the committed state's FSM time (Now) and
	// enabled set (Enabled), and members its members as of a count of
	// the members table's changes (Members): kept apart so that reading
	// them begins no read transaction. The node reads them for every
	// batch and every proposal, and a state a reader has begun on is
	// copied where the next batch changes it instead of changed in place
	// (statestore).
	now     atomic.Int64
	enabled atomic.Pointer[Capabilities]
	members atomic.Pointer[membersAt]
	panics  atomic.Uint64 // handler panics turned into internal errors
	tallies tallies       // applied commands by type and outcome (tally.go)
	rewinds atomic.Uint64 // restores behind the applied index
	halted  atomic.Pointer[Halt]
	// Effects run and failed (see Effect).
	effectRuns, effectFailures atomic.Uint64
	lastEffectFailure          atomic.Pointer[EffectFailure]
	// effectMu runs effects one at a time: the FSM goroutine's and
	// RetryEffects'. keyed is what keyed effects did (effects.go).
	effectMu sync.Mutex
	keyed    keyedEffects

	mu     sync.Mutex
	notify chan struct{} // closed and replaced after every batch
}

type moduleTick struct {
	name string
	fn   func(tx *Tx, budget int) error
}

type moduleAuthorize struct {
	name string
	fn   func(tx *Tx) error
}

type moduleReadAuthorize struct {
	name string
	fn   func(rt *ReadTx) error
}

type moduleRestored struct {
	name string
	fn   func(rt *ReadTx) []Effect
}

// New builds an empty FSM with the core module and the given ones.
func New(cfg Config) (*FSM, error) {
	f := &FSM{
		logger:   cfg.Logger,
		schema:   &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{}},
		commands: map[log.Type]*CommandSpec{},
		queries:  map[QueryType]*QuerySpec{},
		notify:   make(chan struct{}),
		keyed:    keyedEffects{byKey: map[string]*keyedEffect{}, wake: make(chan struct{}, 1)},

		commandModule: map[log.Type]string{},
		queryModule:   map[QueryType]string{},
		eventValues:   map[string]EventValue{},
	}
	if f.logger == nil {
		f.logger = slog.New(slog.DiscardHandler)
	}
	modules := append([]Module{f.coreModule()}, cfg.Modules...)
	names := map[string]bool{}
	for i := range modules {
		if names[modules[i].Name] {
			return nil, fmt.Errorf("fsm: module %q registered twice", modules[i].Name)
		}
		names[modules[i].Name] = true
		if err := f.register(&modules[i]); err != nil {
			return nil, err
		}
	}
	if err := disjointRanges(modules); err != nil {
		return nil, err
	}
	f.served = ServedBy(cfg.Modules...) // core included
	if err := f.served.Validate(); err != nil {
		return nil, fmt.Errorf("fsm: modules serve an invalid set: %w", err)
	}
	sort.Slice(f.tables, func(i, j int) bool { return f.tables[i].Schema.Name < f.tables[j].Schema.Name })
	sort.Slice(f.ticks, func(i, j int) bool { return f.ticks[i].name < f.ticks[j].name })
	sort.Slice(f.restored, func(i, j int) bool { return f.restored[i].name < f.restored[j].name })
	sort.Slice(f.gauges, func(i, j int) bool { return f.gauges[i].name < f.gauges[j].name })
	sort.Slice(f.authorizers, func(i, j int) bool { return f.authorizers[i].name < f.authorizers[j].name })
	sort.Slice(f.readChecks, func(i, j int) bool { return f.readChecks[i].name < f.readChecks[j].name })
	if err := f.schema.Validate(); err != nil {
		return nil, fmt.Errorf("fsm: schema: %w", err)
	}
	db, err := f.emptyDB()
	if err != nil {
		return nil, err
	}
	f.install(db)
	return f, nil
}

// install makes db the state.
func (f *FSM) install(db *statestore.DB) {
	f.db.Store(db)
	f.members.Store(nil) // it would keep the state it replaces alive
	f.committed(readMeta(db.Txn(false)))
}

// committed keeps what Now and Enabled answer, from the meta row a commit
// wrote (or the state installed holds).
func (f *FSM) committed(m *meta) {
	f.now.Store(m.Now)
	f.enabled.Store(m.Enabled)
}

// disjointRanges refuses two modules whose type ranges overlap: each
// module owns its block of command and query types (Module.Types), so a
// domain added later cannot take a number another one uses, even one it
// has not registered yet. Quadratic in the number of modules, a handful.
func disjointRanges(modules []Module) error {
	for i := range modules {
		a := modules[i]
		if !a.Types.valid() {
			continue // a module without commands or queries may own none
		}
		for _, b := range modules[i+1:] {
			if b.Types.valid() && a.Types.overlaps(b.Types) {
				return fmt.Errorf("fsm: the type ranges of modules %q (types %s) and %q (types %s) overlap", a.Name, a.Types, b.Name, b.Types)
			}
		}
	}
	return nil
}

func (f *FSM) register(m *Module) error {
	if (len(m.Commands) > 0 || len(m.Queries) > 0) && !m.Types.valid() {
		return fmt.Errorf("fsm: module %s: declares no type range (Module.Types %s), yet has commands or queries", m.Name, m.Types)
	}
	for _, t := range m.Tables {
		name := t.Schema.Name
		if _, dup := f.schema.Tables[name]; dup {
			return fmt.Errorf("fsm: module %s: table %q registered twice", m.Name, name)
		}
		if t.New == nil {
			return fmt.Errorf("fsm: module %s: table %q has no row constructor", m.Name, name)
		}
		f.schema.Tables[name] = t.Schema
		f.tables = append(f.tables, t)
	}
	for i := range m.Commands {
		c := &m.Commands[i]
		if c.Type == 0 || c.Apply == nil || c.MaxVersion == 0 {
			return fmt.Errorf("fsm: module %s: command %q needs a type, a handler and a version", m.Name, c.Name)
		}
		if c.LedgerTenant != nil && (c.LedgerTenantFrom == 0 || c.LedgerTenantFrom > c.MaxVersion) {
			return fmt.Errorf("fsm: module %s: command %q keys its ledger by tenant from version %d, outside 1..%d", m.Name, c.Name, c.LedgerTenantFrom, c.MaxVersion)
		}
		if !m.Types.Contains(uint16(c.Type)) {
			return fmt.Errorf("fsm: module %s: command %q type %d is outside its range %s", m.Name, c.Name, c.Type, m.Types)
		}
		if prev, dup := f.commands[c.Type]; dup {
			return fmt.Errorf("fsm: module %s: command type %d used by %q and %q", m.Name, c.Type, prev.Name, c.Name)
		}
		f.commands[c.Type] = c
		f.commandModule[c.Type] = m.Name
	}
	for i := range m.Queries {
		q := &m.Queries[i]
		if q.Type == 0 || q.Run == nil {
			return fmt.Errorf("fsm: module %s: query %q needs a type and a handler", m.Name, q.Name)
		}
		if !m.Types.Contains(uint16(q.Type)) {
			return fmt.Errorf("fsm: module %s: query %q type %d is outside its range %s", m.Name, q.Name, q.Type, m.Types)
		}
		if prev, dup := f.queries[q.Type]; dup {
			return fmt.Errorf("fsm: module %s: query type %d used by %q and %q", m.Name, q.Type, prev.Name, q.Name)
		}
		f.queries[q.Type] = q
		f.queryModule[q.Type] = m.Name
	}
	if m.Tick != nil {
		f.ticks = append(f.ticks, moduleTick{name: m.Name, fn: m.Tick})
	}
	// The core module's changes query holds this map and reads it.
	for kind, fn := range m.EventValues { // order-free: fills a map; any duplicate is refused
		if _, dup := f.eventValues[kind]; dup || fn == nil {
			return fmt.Errorf("fsm: module %s: event kind %q: no value function, or one registered twice", m.Name, kind)
		}
		f.eventValues[kind] = fn
	}
	if m.Restored != nil {
		f.restored = append(f.restored, moduleRestored{name: m.Name, fn: m.Restored})
	}
	if m.Authorize != nil {
		f.authorizers = append(f.authorizers, moduleAuthorize{name: m.Name, fn: m.Authorize})
	}
	if m.AuthorizeRead != nil {
		f.readChecks = append(f.readChecks, moduleReadAuthorize{name: m.Name, fn: m.AuthorizeRead})
	}
	if m.Gauges != nil {
		f.gauges = append(f.gauges, moduleGauges{name: m.Name, fn: m.Gauges})
	}
	return nil
}

func (f *FSM) emptyDB() (*statestore.DB, error) {
	db, err := statestore.NewDB(f.schema)
	if err != nil {
		return nil, fmt.Errorf("fsm: state store: %w", err)
	}
	txn := db.Txn(true)
	if err := txn.Insert(tableMeta, &meta{ID: tableMeta, FirstSeq: 1}); err != nil {
		txn.Abort()
		return nil, fmt.Errorf("fsm: state store: %w", err)
	}
	txn.Commit()
	return db, nil
}

// IsInternal reports whether t is a command only the cluster may propose.
// Unknown types are not internal; the FSM refuses them on its own.
func (f *FSM) IsInternal(t log.Type) bool {
	c, ok := f.commands[t]
	return ok && c.Internal
}

func readMeta(txn *statestore.Txn) *meta {
	raw, err := txn.First(tableMeta, "id", tableMeta)
	if err != nil || raw == nil {
		// The meta row is inserted when a store is created or restored;
		// its absence is a bug, and a fresh row keeps Apply total.
		return &meta{ID: tableMeta, FirstSeq: 1}
	}
	m := *raw.(*meta)
	return &m
}

func writeMeta(txn *statestore.Txn, m *meta) {
	// Insert of a row with a valid id into an existing table cannot fail.
	_ = txn.Insert(tableMeta, m)
}

func (f *FSM) broadcast() {
	f.mu.Lock()
	close(f.notify)
	f.notify = make(chan struct{})
	f.mu.Unlock()
}

// Changed returns a channel closed after the next applied batch or restore.
func (f *FSM) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.notify
}

// AppliedIndex is the index of the last entry this FSM applied.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// Panics counts handler panics turned into internal errors (for metrics).
func (f *FSM) Panics() uint64 { return f.panics.Load() }

// WaitApplied blocks until the FSM has applied index, or ctx ends.
func (f *FSM) WaitApplied(ctx context.Context, index uint64) error {
	for {
		ch := f.Changed()
		if f.applied.Load() >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return errs.Errorf(errs.CodeUnavailable, "waiting for index %d: %v", index, ctx.Err())
		}
	}
}

// Query runs a read against the current local state.
func (f *FSM) Query(p identity.Principal, q Query) (out []byte, err error) {
	spec := f.queries[q.Type]
	if spec == nil {
		return nil, errs.Errorf(errs.CodeInvalid, "unknown query type %d", q.Type)
	}
	if h := f.halted.Load(); h != nil {
		return nil, h.err()
	}
	txn := f.db.Load().Txn(false)
	m := readMeta(txn)
	if mod := f.queryModule[q.Type]; mod != coreModuleName && m.Enabled != nil && !m.Enabled.HasDomain(mod) {
		return nil, errs.Errorf(errs.CodeUnavailable, "%s: domain %s is not enabled in this cluster", spec.Name, mod)
	}
	rt := &ReadTx{Now: m.Now, Index: m.Index, Principal: p, Adapter: q.Adapter, Txn: txn}
	defer func() {
		if r := recover(); r != nil {
			f.panics.Add(1)
			f.logger.Error("query handler panicked", "query", spec.Name, "panic", r, "stack", string(debug.Stack()))
			out, err = nil, errs.Errorf(errs.CodeInternal, "%s: query failed", spec.Name)
		}
	}()
	if !q.Stale && !p.Trusted() {
		for _, a := range f.readChecks {
			if err := a.fn(rt); err != nil {
				return nil, errs.From(err)
			}
		}
	}
	res, qerr := spec.Run(rt, q.Payload)
	if qerr != nil {
		return nil, errs.From(qerr)
	}
	body, merr := log.Marshal(res)
	if merr != nil {
		return nil, errs.Errorf(errs.CodeInternal, "%s: encode result: %v", spec.Name, merr)
	}
	return body, nil
}

// Now is the FSM clock (unix ms) as of the last applied command.
func (f *FSM) Now() int64 {
	return f.now.Load()
}
