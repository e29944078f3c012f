package allocation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"pgregory.net/rapid"
)

// The reference model: a space's tasks, keys, duplicates and
// reservations as plain maps, with the lifecycle written out again, at
// command version 1 (the state ungated, as a log written before issue 40
// replays) or at the versions this binary serves. Titles come from a
// pool whose targets under each of the model's catalogs are known in
// advance (the fixture's binds and title fallbacks), so the model never
// asks the implementation for a key.

// modelCatalogs are the catalogs a put may switch between: T1 and T3,
// T3 only, none.
var modelCatalogs = [][]CatalogRow{
	{{WorkItemID: "T1", CanonicalTitle: "Comparative survey of multi-agent orchestration patterns and harnesses", Aliases: []string{"literature review of agent frameworks"}},
		{WorkItemID: "T3", CanonicalTitle: "Stopping and re-entry patterns for looping agents", Aliases: []string{"halting conditions and termination", "checkpoints and resumption of loops"}}},
	{{WorkItemID: "T3", CanonicalTitle: "Stopping and re-entry patterns for looping agents", Aliases: []string{"halting conditions and termination", "checkpoints and resumption of loops"}}},
	{},
}

// modelTitles: each title and its target under each catalog.
var modelTitles = []struct {
	title   string
	targets [3]string
}{
	{"Survey multi-agent orchestration patterns, harnesses and frameworks (loops, checkpoints)", [3]string{"task:s:slot:T1",
		"task:s:survey multi-agent orchestration patterns, harnesses and frameworks (loops, checkpoints)",
		"task:s:survey multi-agent orchestration patterns, harnesses and frameworks (loops, checkpoints)"}},
	{"Comparative survey of multi-agent orchestration patterns and harnesses", [3]string{"task:s:slot:T1",
		"task:s:comparative survey of multi-agent orchestration patterns and harnesses",
		"task:s:comparative survey of multi-agent orchestration patterns and harnesses"}},
	{"Stopping and re-entry of looping agents: halting conditions, termination, checkpoints, resumption, agent loops frameworks", [3]string{
		"task:s:slot:T3", "task:s:slot:T3",
		"task:s:stopping and re-entry of looping agents: halting conditions, termination, checkpoints, resumption, agent loops frameworks"}},
	{"Re-entry after stopping: checkpoints and termination for a looping agent", [3]string{"task:s:slot:T3", "task:s:slot:T3",
		"task:s:re-entry after stopping: checkpoints and termination for a looping agent"}},
	{"Write the  README", [3]string{"task:s:write the readme", "task:s:write the readme", "task:s:write the readme"}},
	{"write the readme", [3]string{"task:s:write the readme", "task:s:write the readme", "task:s:write the readme"}},
	{"Ｆｉｘ Straße", [3]string{"task:s:ｆｉｘ strasse", "task:s:ｆｉｘ strasse", "task:s:ｆｉｘ strasse"}},
}

var modelModes = []string{"result", "draft"}

type mTask struct {
	title      int
	given      bool // created with work_item_id T1
	created    ConflictKey
	key        ConflictKey
	inherited  []ConflictKey
	status     string
	version    uint64
	hold       bool
	superseded bool
	dup        bool
}

type mRes struct {
	title     int
	key       ConflictKey
	expires   int64
	committed bool
}

type model struct {
	v2         bool
	clock, now int64
	catalog    int
	next       uint64
	tasks      map[uint64]*mTask
	holder     map[ConflictKey]string // "task:N", "note:N", "res:P", "ext:P"
	res        map[string]*mRes
	idem       map[string]string // key -> "digest id"
	notes      uint64
}

func (m *model) stamp() { m.now = max(m.now, m.clock) }

// keyOf is the key a title (or the given work item T1) forms now.
func (m *model) keyOf(title int, given bool, mode string) ConflictKey {
	target := modelTitles[title].targets[m.catalog]
	if given {
		target = "task:s:slot:T1"
	}
	return ConflictKey{Kind: KindCreateTask, Target: target, DeliveryMode: mode}
}

// row is the holder of k's row while it holds ("" when free or an
// expired reservation).
func (m *model) row(k ConflictKey) string {
	h := m.holder[k]
	if len(h) > 4 && h[:4] == "res:" && m.now >= m.res[h[4:]].expires {
		return ""
	}
	return h
}

// holds is the live holder of k at now ("" when free): the row's, or the
// earliest duplicate waiting for a key whose row no longer holds.
func (m *model) holds(k ConflictKey) string {
	if h := m.row(k); h != "" {
		return h
	}
	if d := m.firstDup(k); d != 0 {
		return fmt.Sprintf("task:%d", d)
	}
	return ""
}

func (m *model) firstDup(k ConflictKey) uint64 {
	for id := uint64(1); id < m.next; id++ {
		if t := m.tasks[id]; t.dup && t.key == k {
			return id
		}
	}
	return 0
}

func (m *model) wants(t *mTask) bool {
	return Live(t.status) || m.v2 && t.hold && !t.superseded
}

func (t *mTask) keys() []ConflictKey { return append([]ConflictKey{t.key}, t.inherited...) }

func taskRef(id uint64) string { return fmt.Sprintf("task:%d", id) }

// promote gives free key k to its earliest duplicate.
func (m *model) promote(k ConflictKey) {
	if d := m.firstDup(k); d != 0 {
		m.holder[k] = taskRef(d)
		m.tasks[d].dup = false
	}
}

// vacate frees k if h holds it, for its earliest duplicate.
func (m *model) vacate(k ConflictKey, h string) {
	if m.holder[k] == h {
		delete(m.holder, k)
		m.promote(k)
	}
}

func (m *model) release(id uint64) {
	t := m.tasks[id]
	for _, k := range t.keys() {
		m.vacate(k, taskRef(id))
	}
	t.dup = false
}

func (m *model) take(id uint64) {
	t := m.tasks[id]
	for i, k := range t.keys() {
		switch h := m.holds(k); {
		case h == "":
			m.holder[k] = taskRef(id)
		case i == 0 && h != taskRef(id):
			t.dup = true
		}
	}
}

type machine struct {
	m   *model
	l   *fsmtest.Local
	svc *Service
	ctx context.Context
}

func newMachine(t *rapid.T, v2 bool) *machine {
	l, err := fsmtest.New(Module())
	if err != nil {
		t.Fatal(err)
	}
	if v2 {
		if err := l.Enable(fsm.ServedBy(Module())); err != nil {
			t.Fatal(err)
		}
	}
	mc := &machine{m: &model{v2: v2, clock: fsmtest.Epoch, next: 1, tasks: map[uint64]*mTask{}, holder: map[ConflictKey]string{},
		res: map[string]*mRes{}, idem: map[string]string{}}, l: l, svc: NewService(l, l), ctx: context.Background()}
	_, err = mc.svc.PutSpace(mc.ctx, "s", PutSpaceRequest{DeliveryModes: modelModes, WindowMs: 1000, Catalog: modelCatalogs[0]})
	if err != nil {
		t.Fatal(err)
	}
	mc.m.stamp()
	return mc
}

// wantConflict checks err is the 409 naming holder h.
func wantConflict(t *rapid.T, what string, err error, h string) {
	if len(h) > 4 && h[:4] == "ext:" { // commits name winner {issue, proposal id}
		h = "issue:" + h[4:]
	}
	var c *Conflict
	if !errors.As(err, &c) || c.WriteOccurred || c.Winner == nil {
		t.Fatalf("%s: %v, want a 409 naming %s", what, err, h)
	}
	if got := c.Winner.Type + ":" + c.Winner.ID.String(); c.Winner.Type == WinnerReservedIntent && "res:"+c.ReservedProposalID != h || c.Winner.Type != WinnerReservedIntent && got != h {
		t.Fatalf("%s: 409 names %s, the model says %s", what, got, h)
	}
}

// check: the stored state keeps its invariants and is the model's: each
// task's status, key, inherited keys, version, hold and duplicate row,
// each key's holder, the reservations.
func (mc *machine) check(t *rapid.T) {
	st := readStored(t, mc.l.FSM)
	m := mc.m
	if bad := st.invariants(m.now); len(bad) > 0 {
		t.Fatalf("invariants: %v", bad)
	}
	if len(st.tasks) != len(m.tasks) {
		t.Fatalf("%d tasks stored, the model has %d", len(st.tasks), len(m.tasks))
	}
	dups := map[uint64]bool{}
	for _, d := range st.dups {
		dups[d.TaskID] = true
	}
	for _, task := range st.tasks {
		mt := m.tasks[task.ID]
		if mt == nil || task.Status != mt.status || task.ConflictKey != mt.key || task.Version != mt.version || task.StewardHold != mt.hold ||
			!slices.Equal(task.InheritedKeys, mt.inherited) || dups[task.ID] != mt.dup {
			t.Fatalf("task %d stored %+v (duplicate %t), the model %+v", task.ID, task, dups[task.ID], mt)
		}
	}
	held := map[ConflictKey]string{}
	for _, o := range st.occupancy {
		h := map[string]string{WinnerTask: "task:", WinnerNote: "note:", WinnerReservedIntent: "res:"}[o.WinnerType] + o.WinnerID.String()
		if !slices.Contains([]string{WinnerTask, WinnerNote, WinnerReservedIntent}, o.WinnerType) {
			h = "ext:" + o.ProposalID
		}
		held[o.key()] = h
	}
	for k, h := range m.holder {
		if held[k] != h {
			t.Fatalf("key %+v held by %q, the model says %q", k, held[k], h)
		}
	}
	for k, h := range held {
		if m.holder[k] != h && !(len(h) > 4 && h[:4] == "res:") { // an expired reservation may linger until Tick
			t.Fatalf("key %+v held by %q, the model has none", k, h)
		}
	}
}

// TestAllocationModel drives the service over a bare FSM with random
// creates, windows, reservations, transitions, supersessions, holds,
// notes, catalog changes, clock moves, ticks and snapshot restores, and
// the model alongside; after every step the stored state must be the
// model's. It runs at version 1 and at this binary's versions.
func TestAllocationModel(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v2=%t", v2), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				mc := newMachine(t, v2)
				actions := []func(*rapid.T){mc.create, mc.create, mc.window, mc.reserve, mc.endReservation, mc.transition, mc.transition,
					mc.supersedeOrHold, mc.note, mc.putCatalog, mc.advance, mc.tick, mc.snapshot}
				for i, n := 0, rapid.IntRange(1, 60).Draw(t, "steps"); i < n; i++ {
					actions[rapid.IntRange(0, len(actions)-1).Draw(t, "action")](t)
					mc.check(t)
				}
			})
		})
	}
}
