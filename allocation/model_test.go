package allocation

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"pgregory.net/rapid"
)

// The reference model: a space's tasks, keys and reservations as plain
// maps, with the lifecycle written out again. Titles come from a pool
// whose targets are known in advance (the fixture's binds and title
// fallbacks), so the model never asks the implementation for a key.

var modelTitles = []struct{ title, target string }{
	{"Survey multi-agent orchestration patterns, harnesses and frameworks (loops, checkpoints)", "task:s:slot:T1"},
	{"Comparative survey of multi-agent orchestration patterns and harnesses", "task:s:slot:T1"},
	{"Stopping and re-entry of looping agents: halting conditions, termination, checkpoints, resumption, agent loops frameworks", "task:s:slot:T3"},
	{"Re-entry after stopping: checkpoints and termination for a looping agent", "task:s:slot:T3"},
	{"Write the  README", "task:s:write the readme"},
	{"write the readme", "task:s:write the readme"},
	{"Ｆｉｘ Straße", "task:s:ｆｉｘ strasse"},
}

var modelModes = []string{"result", "draft"}

type mTask struct {
	key        ConflictKey
	status     string
	version    uint64
	hold       bool
	superseded bool
}

type mRes struct {
	title     int
	key       ConflictKey
	expires   int64
	committed bool
}

type model struct {
	clock, now int64
	next       uint64
	tasks      map[uint64]*mTask
	holder     map[ConflictKey]string // "task:N", "note:N", "res:P", "ext:P"
	res        map[string]*mRes
	idem       map[string]string // key -> "digest|task id"
	notes      uint64
}

func (m *model) stamp() { m.now = max(m.now, m.clock) }

// holds is the live holder of k at now ("" when free).
func (m *model) holds(k ConflictKey) string {
	h := m.holder[k]
	if len(h) > 4 && h[:4] == "res:" && m.now >= m.res[h[4:]].expires {
		return ""
	}
	return h
}

type machine struct {
	m   *model
	l   *fsmtest.Local
	svc *Service
	ctx context.Context
}

func newMachine(t *rapid.T) *machine {
	l, err := fsmtest.New(Module())
	if err != nil {
		t.Fatal(err)
	}
	mc := &machine{m: &model{clock: fsmtest.Epoch, next: 1, tasks: map[uint64]*mTask{}, holder: map[ConflictKey]string{},
		res: map[string]*mRes{}, idem: map[string]string{}}, l: l, svc: NewService(l, l), ctx: context.Background()}
	_, err = mc.svc.PutSpace(mc.ctx, "s", PutSpaceRequest{DeliveryModes: modelModes, WindowMs: 1000, Catalog: []CatalogRow{
		{WorkItemID: "T1", CanonicalTitle: "Comparative survey of multi-agent orchestration patterns and harnesses", Aliases: []string{"literature review of agent frameworks"}},
		{WorkItemID: "T3", CanonicalTitle: "Stopping and re-entry patterns for looping agents", Aliases: []string{"halting conditions and termination", "checkpoints and resumption of loops"}}}})
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
	if !errors.As(err, &c) || c.WriteOccurred {
		t.Fatalf("%s: %v, want a 409 naming %s", what, err, h)
	}
	if got := c.Winner.Type + ":" + c.Winner.ID.String(); c.Winner.Type == WinnerReservedIntent && "res:"+c.ReservedProposalID != h || c.Winner.Type != WinnerReservedIntent && got != h {
		t.Fatalf("%s: 409 names %s, the model says %s", what, got, h)
	}
}

// check: the stored state keeps its invariants and is the model's: each
// task's status and key, each key's holder, the reservations.
func (mc *machine) check(t *rapid.T) {
	st := readStored(t, mc.l.FSM)
	m := mc.m
	if bad := st.invariants(m.now); len(bad) > 0 {
		t.Fatalf("invariants: %v", bad)
	}
	if len(st.tasks) != len(m.tasks) {
		t.Fatalf("%d tasks stored, the model has %d", len(st.tasks), len(m.tasks))
	}
	for _, task := range st.tasks {
		mt := m.tasks[task.ID]
		if mt == nil || task.Status != mt.status || task.ConflictKey != mt.key || task.Version != mt.version || task.StewardHold != mt.hold {
			t.Fatalf("task %d stored %+v, the model %+v", task.ID, task, mt)
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
// notes, clock moves, ticks and snapshot restores, and the model
// alongside; after every step the stored state must be the model's.
func TestAllocationModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mc := newMachine(t)
		actions := []func(*rapid.T){mc.create, mc.create, mc.window, mc.reserve, mc.endReservation, mc.transition, mc.transition,
			mc.supersedeOrHold, mc.note, mc.advance, mc.tick, mc.snapshot}
		for i, n := 0, rapid.IntRange(1, 60).Draw(t, "steps"); i < n; i++ {
			actions[rapid.IntRange(0, len(actions)-1).Draw(t, "action")](t)
			mc.check(t)
		}
	})
}
