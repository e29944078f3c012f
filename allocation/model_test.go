package allocation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
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

// create is one create_task against the model: what it must answer.
func (mc *machine) createStep(t *rapid.T, what string, title int, mode, key string, got *Task, replayed bool, err error) {
	m := mc.m
	k := ConflictKey{Kind: KindCreateTask, Target: modelTitles[title].target, DeliveryMode: mode}
	digest := fmt.Sprintf("%d/%s", title, mode)
	if key != "" {
		if prev, ok := m.idem[key]; ok {
			var d string
			var id uint64
			fmt.Sscanf(prev, "%s %d", &d, &id)
			if d != digest {
				if !errors.Is(err, errs.IdempotencyConflict) {
					t.Fatalf("%s: %v, want idempotency_conflict", what, err)
				}
				return
			}
			if err != nil || !replayed || got.ID != id || got.Status != StatusOpen || got.Version != 1 {
				t.Fatalf("%s: %+v %v, want the replay of task %d", what, got, err, id)
			}
			return
		}
	}
	if h := m.holds(k); h != "" {
		wantConflict(t, what, err, h)
		return
	}
	if err != nil || got.ID != m.next || got.ConflictKey != k || replayed {
		t.Fatalf("%s: %+v %v, want task %d on %+v", what, got, err, m.next, k)
	}
	m.tasks[m.next] = &mTask{key: k, status: StatusOpen, version: 1}
	m.holder[k] = fmt.Sprintf("task:%d", m.next)
	if key != "" {
		m.idem[key] = fmt.Sprintf("%s %d", digest, m.next)
	}
	m.next++
}

func (mc *machine) create(t *rapid.T) {
	title := rapid.IntRange(0, len(modelTitles)-1).Draw(t, "title")
	mode := rapid.SampledFrom(modelModes).Draw(t, "mode")
	key := rapid.SampledFrom([]string{"", "", "k1", "k2"}).Draw(t, "key")
	mc.m.stamp()
	res, err := mc.svc.CreateTask(mc.ctx, "s", CreateTaskRequest{Title: modelTitles[title].title, DeliveryMode: mode, IdempotencyKey: key})
	var got Task
	replayed := false
	if res != nil {
		got, replayed = res.Task, res.Replayed
	}
	mc.createStep(t, "create", title, mode, key, &got, replayed, err)
}

func (mc *machine) window(t *rapid.T) {
	n := rapid.IntRange(1, 4).Draw(t, "proposals")
	var ps []Proposal
	titles := map[string]int{}
	for i := 0; i < n; i++ {
		title := rapid.IntRange(0, len(modelTitles)-1).Draw(t, "title")
		p := Proposal{ProposalID: fmt.Sprintf("w%d", i), Title: modelTitles[title].title, DeliveryMode: rapid.SampledFrom(modelModes).Draw(t, "mode")}
		if rapid.Bool().Draw(t, "seq") {
			p.ReceivedSeq = ptrTo(uint64(rapid.IntRange(0, 3).Draw(t, "received_seq")))
		}
		titles[p.ProposalID] = title
		ps = append(ps, p)
	}
	mc.m.stamp()
	res, err := mc.svc.Window(mc.ctx, "s", WindowRequest{Proposals: ps})
	if err != nil || len(res.Results) != n {
		t.Fatalf("window: %+v %v", res, err)
	}
	order := slices.Clone(ps)
	sort.SliceStable(order, func(i, j int) bool {
		si, sj := uint64(0), uint64(0)
		if order[i].ReceivedSeq != nil {
			si = *order[i].ReceivedSeq
		}
		if order[j].ReceivedSeq != nil {
			sj = *order[j].ReceivedSeq
		}
		return si < sj || si == sj && order[i].PayloadSHA256() < order[j].PayloadSHA256()
	})
	for i, e := range res.Results {
		if e.ProposalID != order[i].ProposalID {
			t.Fatalf("window order: %s at %d, want %s", e.ProposalID, i, order[i].ProposalID)
		}
		var err error
		var got Task
		switch e.Status {
		case 201:
			got = *e.Task
		case 409:
			err = e.Conflict
		default:
			err = e.Error
		}
		mc.createStep(t, "window "+e.ProposalID, titles[e.ProposalID], order[i].DeliveryMode, "", &got, e.Replayed, err)
	}
}

func (mc *machine) reserve(t *rapid.T) {
	title := rapid.IntRange(0, len(modelTitles)-1).Draw(t, "title")
	p := rapid.SampledFrom([]string{"p1", "p2", "p3"}).Draw(t, "proposal")
	m := mc.m
	m.stamp()
	res, err := mc.svc.Reserve(mc.ctx, "s", ReserveRequest{ProposalID: p, Title: modelTitles[title].title, DeliveryMode: "result"})
	k := ConflictKey{Kind: KindCreateTask, Target: modelTitles[title].target, DeliveryMode: "result"}
	if old := m.res[p]; old != nil && (old.committed || m.now < old.expires) {
		if old.title == title {
			if err != nil || !res.Replayed {
				t.Fatalf("reserve %s again: %+v %v", p, res, err)
			}
		} else if !errors.Is(err, errs.Conflict) {
			t.Fatalf("reserve %s for another key: %v", p, err)
		}
		return
	}
	if h := m.holds(k); h != "" {
		wantConflict(t, "reserve", err, h)
		return
	}
	if err != nil || res.Reservation.ExpiresAtMs != m.now+1000 {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	if old := m.res[p]; old != nil && m.holder[old.key] == "res:"+p {
		delete(m.holder, old.key)
	}
	m.res[p] = &mRes{title: title, key: k, expires: m.now + 1000}
	m.holder[k] = "res:" + p
}

func (mc *machine) endReservation(t *rapid.T) {
	p := rapid.SampledFrom([]string{"p1", "p2", "p3"}).Draw(t, "proposal")
	op := rapid.SampledFrom([]string{"commit", "abort", "release"}).Draw(t, "op")
	m := mc.m
	m.stamp()
	var err error
	switch op {
	case "commit":
		_, err = mc.svc.Commit(mc.ctx, "s", p, CommitRequest{Winner: &Winner{Type: "issue", ID: StrID(p)}})
	case "abort":
		_, err = mc.svc.Abort(mc.ctx, "s", p)
	default:
		_, err = mc.svc.Release(mc.ctx, "s", p)
	}
	r := m.res[p]
	switch {
	case r == nil:
		if !errors.Is(err, errs.NotFound) {
			t.Fatalf("%s of no reservation: %v", op, err)
		}
	case op == "commit" && r.committed:
		if err != nil {
			t.Fatalf("commit again: %v", err)
		}
	case op == "commit" && m.now >= r.expires:
		if !errors.Is(err, errs.Expired) {
			t.Fatalf("commit after expiry: %v", err)
		}
	case op == "commit":
		if err != nil {
			t.Fatalf("commit: %v", err)
		}
		r.committed = true
		m.holder[r.key] = "ext:" + p
	case (op == "release") != r.committed:
		if !errors.Is(err, errs.Conflict) {
			t.Fatalf("%s of a reservation committed=%t: %v", op, r.committed, err)
		}
	default:
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if h := m.holder[r.key]; h == "res:"+p || h == "ext:"+p {
			delete(m.holder, r.key)
		}
		delete(m.res, p)
	}
}

var modelRules = map[string][2][]string{
	ActionClaim: {{StatusOpen}, {StatusClaimed}}, ActionAssign: {{StatusOpen, StatusClaimed}, {StatusAssigned}},
	ActionSubmit: {{StatusClaimed, StatusAssigned}, {StatusInReview}}, ActionReview: {{StatusInReview}, {StatusInReview}},
	ActionDone:     {{StatusClaimed, StatusAssigned, StatusInReview}, {StatusDone}},
	ActionReject:   {{StatusOpen, StatusClaimed, StatusAssigned, StatusInReview}, {StatusRejected}},
	ActionWithdraw: {{StatusOpen, StatusClaimed, StatusAssigned, StatusInReview}, {StatusWithdrawn}},
	ActionReopen:   {{StatusDone, StatusRejected, StatusWithdrawn}, {StatusOpen}},
}

func (mc *machine) pickTask(t *rapid.T) (uint64, *mTask) {
	if mc.m.next == 1 {
		return 0, nil
	}
	id := uint64(rapid.IntRange(1, int(mc.m.next-1)).Draw(t, "task"))
	return id, mc.m.tasks[id]
}

func (mc *machine) transition(t *rapid.T) {
	id, mt := mc.pickTask(t)
	if mt == nil {
		return
	}
	action := rapid.SampledFrom([]string{ActionClaim, ActionAssign, ActionSubmit, ActionReview, ActionDone, ActionReject, ActionWithdraw, ActionReopen}).Draw(t, "action")
	m := mc.m
	m.stamp()
	res, err := mc.svc.Transition(mc.ctx, "s", id, TransitionRequest{Action: action})
	rule := modelRules[action]
	switch {
	case mt.superseded:
		var c *Conflict
		if !errors.As(err, &c) || c.Err != ErrTaskSuperseded {
			t.Fatalf("%s on superseded %d: %v", action, id, err)
		}
		return
	case !slices.Contains(rule[0], mt.status):
		if !errors.Is(err, errs.Conflict) {
			t.Fatalf("%s from %s: %v", action, mt.status, err)
		}
		return
	case action == ActionReopen && mt.hold:
		if !errors.Is(err, errs.Conflict) {
			t.Fatalf("reopen under hold: %v", err)
		}
		return
	case action == ActionReopen && m.holds(mt.key) != "":
		wantConflict(t, "reopen", err, m.holds(mt.key))
		return
	}
	if err != nil || res.Task.Status != rule[1][0] || res.Task.Version != mt.version+1 {
		t.Fatalf("%s of %d: %+v %v", action, id, res, err)
	}
	if Live(mt.status) && !Live(rule[1][0]) {
		delete(m.holder, mt.key)
	}
	if action == ActionReopen {
		m.holder[mt.key] = fmt.Sprintf("task:%d", id)
	}
	mt.status, mt.version = rule[1][0], mt.version+1
}

func (mc *machine) supersedeOrHold(t *rapid.T) {
	id, mt := mc.pickTask(t)
	if mt == nil {
		return
	}
	m := mc.m
	m.stamp()
	if rapid.Bool().Draw(t, "hold") {
		hold := rapid.Bool().Draw(t, "on")
		res, err := mc.svc.Hold(mc.ctx, "s", id, HoldRequest{Hold: hold})
		switch {
		case mt.superseded:
			if !errors.As(err, new(*Conflict)) {
				t.Fatalf("hold of superseded: %v", err)
			}
		case err != nil || res.Task.StewardHold != hold:
			t.Fatalf("hold: %+v %v", res, err)
		case mt.hold != hold:
			mt.hold, mt.version = hold, mt.version+1
		}
		return
	}
	survivor, st := mc.pickTask(t)
	_, err := mc.svc.Supersede(mc.ctx, "s", id, SupersedeRequest{SurvivingTask: survivor, Reason: "allocation_duplicate"})
	switch {
	case survivor == id:
		if !errors.Is(err, errs.Invalid) {
			t.Fatalf("self supersede: %v", err)
		}
	case mt.superseded:
		if !errors.As(err, new(*Conflict)) {
			t.Fatalf("supersede of superseded: %v", err)
		}
	case st.superseded:
		if !errors.Is(err, errs.Conflict) {
			t.Fatalf("supersede by a superseded survivor: %v", err)
		}
	case err != nil:
		t.Fatalf("supersede: %v", err)
	default:
		if Live(mt.status) {
			delete(m.holder, mt.key)
		}
		mt.status, mt.superseded, mt.version = StatusSuperseded, true, mt.version+1
	}
}

func (mc *machine) note(t *rapid.T) {
	id, mt := mc.pickTask(t)
	if mt == nil {
		return
	}
	crit := ptrTo(int64(rapid.IntRange(0, 1).Draw(t, "criterion")))
	body := rapid.SampledFrom([]string{"a", " a ", "b"}).Draw(t, "body")
	m := mc.m
	m.stamp()
	res, err := mc.svc.PostNote(mc.ctx, "s", id, NoteRequest{Kind: KindPostReviewNote, CriterionIndex: crit, Body: body, DeliveryMode: "result"})
	k := ConflictKey{Kind: KindPostReviewNote, Target: noteTarget("s", id, crit, "", body), DeliveryMode: "result"}
	switch {
	case mt.superseded:
		if !errors.As(err, new(*Conflict)) {
			t.Fatalf("note on superseded: %v", err)
		}
	case m.holds(k) != "":
		wantConflict(t, "note", err, m.holds(k))
	case err != nil || res.Note.ID != m.notes+1:
		t.Fatalf("note: %+v %v", res, err)
	default:
		m.notes++
		m.holder[k] = fmt.Sprintf("note:%d", m.notes)
	}
}

func (mc *machine) advance(t *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{100 * time.Millisecond, 600 * time.Millisecond, 2 * time.Second}).Draw(t, "advance")
	mc.m.clock += d.Milliseconds()
	mc.l.Advance(d)
}

func (mc *machine) tick(t *rapid.T) {
	tk := fsm.Tick{Budget: 64, FeedRetain: 64, IdemRetentionMs: 1 << 40}
	res, err := mc.l.Propose(mc.ctx, log.Command{Type: fsm.CmdTick, Version: 1, Payload: log.MustMarshal(tk)})
	if err != nil || res.Err != nil {
		t.Fatalf("tick: %v %v", err, res.Err)
	}
	m := mc.m
	m.stamp()
	for p, r := range m.res {
		if !r.committed && m.now >= r.expires {
			if m.holder[r.key] == "res:"+p {
				delete(m.holder, r.key)
			}
			delete(m.res, p)
		}
	}
}

func (mc *machine) snapshot(t *rapid.T) {
	var buf bytes.Buffer
	if err := mc.l.FSM.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	index, hash, _ := mc.l.FSM.StateHash()
	if err := mc.l.FSM.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	if i, h, err := mc.l.FSM.StateHash(); err != nil || i != index || h != hash {
		t.Fatalf("restored state %d %x, was %d %x", i, h, index, hash)
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
