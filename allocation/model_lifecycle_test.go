package allocation

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
	"pgregory.net/rapid"
)

// The model test's other steps: the task lifecycle, supersession and
// steward holds, notes, the clock, ticks and snapshot restores.

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
	key := mt.key
	if action == ActionReopen && m.v2 && !mt.given {
		key = m.keyOf(mt.title, false, mt.key.DeliveryMode)
	}
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
	case action == ActionReopen && m.holds(key) != "":
		wantConflict(t, "reopen", err, m.holds(key))
		return
	}
	if err != nil || res.Task.Status != rule[1][0] || res.Task.Version != mt.version+1 || res.Task.ConflictKey != key {
		t.Fatalf("%s of %d: %+v %v", action, id, res, err)
	}
	wanted := m.wants(mt)
	mt.status, mt.version, mt.key = rule[1][0], mt.version+1, key
	if wanted && !m.wants(mt) {
		m.release(id)
	}
	if action == ActionReopen {
		m.take(id)
	}
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
		case mt.hold == hold:
			if m.v2 && hold {
				m.take(id)
			}
		default:
			wanted := m.wants(mt)
			mt.hold, mt.version = hold, mt.version+1
			switch {
			case m.v2 && !wanted && m.wants(mt):
				m.take(id)
			case m.v2 && wanted && !m.wants(mt):
				m.release(id)
			}
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
	case !m.v2:
		if Live(mt.status) {
			m.release(id)
		}
		mt.status, mt.superseded, mt.version = StatusSuperseded, true, mt.version+1
	default:
		inherited := slices.Clone(st.inherited)
		for _, k := range mt.keys() {
			if k != st.key && !slices.Contains(inherited, k) {
				inherited = append(inherited, k)
			}
		}
		sWants := m.wants(st)
		mt.dup = false
		for _, k := range mt.keys() {
			switch {
			case m.holder[k] == taskRef(id) && !sWants:
				m.vacate(k, taskRef(id))
				continue
			case !sWants:
				continue
			case m.holder[k] != taskRef(id) && m.holds(k) != "":
				continue
			}
			m.holder[k] = taskRef(survivor)
			if k == st.key {
				st.dup = false
			}
		}
		if len(inherited) != len(st.inherited) {
			st.inherited, st.version = inherited, st.version+1
		}
		mt.status, mt.superseded, mt.version = StatusSuperseded, true, mt.version+1
	}
}

// putCatalog switches the space to one of the model's catalogs; at
// version 2 the put rebinds the live tasks, the earliest keeping a key
// two then want.
func (mc *machine) putCatalog(t *rapid.T) {
	c := rapid.IntRange(0, len(modelCatalogs)-1).Draw(t, "catalog")
	m := mc.m
	m.stamp()
	res, err := mc.svc.PutSpace(mc.ctx, "s", PutSpaceRequest{DeliveryModes: modelModes, WindowMs: 1000, Catalog: modelCatalogs[c]})
	if err != nil {
		t.Fatalf("put catalog %d: %v", c, err)
	}
	m.catalog = c
	if !m.v2 {
		return
	}
	var changed []uint64
	for id := uint64(1); id < m.next; id++ {
		if mt := m.tasks[id]; Live(mt.status) && !mt.given && m.keyOf(mt.title, false, mt.key.DeliveryMode) != mt.key {
			changed = append(changed, id)
		}
	}
	var vacated []ConflictKey
	for _, id := range changed {
		mt := m.tasks[id]
		if m.holder[mt.key] == taskRef(id) {
			delete(m.holder, mt.key)
			vacated = append(vacated, mt.key)
		} else {
			mt.dup = false
		}
	}
	for _, id := range changed {
		mt := m.tasks[id]
		mt.key, mt.version = m.keyOf(mt.title, false, mt.key.DeliveryMode), mt.version+1
		h := m.row(mt.key)
		var j uint64
		if _, err := fmt.Sscanf(h, "task:%d", &j); err != nil {
			j = 0
		}
		switch {
		case h == taskRef(id):
		case j > id && m.tasks[j].key == mt.key:
			m.holder[mt.key] = taskRef(id)
			m.tasks[j].dup = true
		case h != "":
			mt.dup = true
		case m.firstDup(mt.key) != 0 && m.firstDup(mt.key) < id:
			m.promote(mt.key)
			mt.dup = true
		default:
			m.holder[mt.key] = taskRef(id)
		}
	}
	for _, k := range vacated {
		if m.row(k) == "" {
			m.promote(k)
		}
	}
	if res.Rebound != len(changed) {
		t.Fatalf("put catalog %d rebound %d, the model %d", c, res.Rebound, len(changed))
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
			m.vacate(r.key, "res:"+p)
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
