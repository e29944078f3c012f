package allocation

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/arbiterhq/arbiter/errs"
	"pgregory.net/rapid"
)

// The model test's steps that take keys: creates, windows, reservations
// and their ends, each checked against what the model says it must
// answer.

// createStep checks one create_task answer (got, replayed, err) against
// what the model says it must be, and steps the model. inWin holds what
// earlier proposals of the same window created (nil outside windows),
// proposal is this one's id.
func (mc *machine) createStep(t *rapid.T, what string, title int, given bool, mode, key string, inWin map[ConflictKey]string, proposal string,
	got *Task, replayed bool, err error) {
	m := mc.m
	digest := fmt.Sprintf("%d/%s/%t", title, mode, given)
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
			if err != nil || !replayed || got.ID != id || got.Status != StatusOpen || got.Version != 1 || got.ConflictKey != m.tasks[id].created {
				t.Fatalf("%s: %+v %v, want the replay of task %d", what, got, err, id)
			}
			return
		}
	}
	if m.v2 && given && m.catalog != 0 {
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != errs.CodeInvalid || e.Detail["reason"] != ReasonUnknownWorkItem {
			t.Fatalf("%s: %v, want 422 unknown_work_item", what, err)
		}
		return
	}
	k := m.keyOf(title, given, mode)
	if p, ok := inWin[k]; ok {
		wantConflict(t, what, err, "res:"+p)
		return
	}
	if h := m.holds(k); h != "" {
		wantConflict(t, what, err, h)
		return
	}
	if err != nil || got.ID != m.next || got.ConflictKey != k || replayed {
		t.Fatalf("%s: %+v %v, want task %d on %+v", what, got, err, m.next, k)
	}
	m.tasks[m.next] = &mTask{title: title, given: given, created: k, key: k, status: StatusOpen, version: 1}
	m.holder[k] = taskRef(m.next)
	if key != "" {
		m.idem[key] = fmt.Sprintf("%s %d", digest, m.next)
	}
	if inWin != nil {
		inWin[k] = proposal
	}
	m.next++
}

func (mc *machine) create(t *rapid.T) {
	title := rapid.IntRange(0, len(modelTitles)-1).Draw(t, "title")
	mode := rapid.SampledFrom(modelModes).Draw(t, "mode")
	key := rapid.SampledFrom([]string{"", "", "k1", "k2"}).Draw(t, "key")
	given := rapid.IntRange(0, 4).Draw(t, "given") == 0
	req := CreateTaskRequest{Title: modelTitles[title].title, DeliveryMode: mode, IdempotencyKey: key}
	if given {
		req.WorkItemID = ptrTo("T1")
	}
	mc.m.stamp()
	res, err := mc.svc.CreateTask(mc.ctx, "s", req)
	var got Task
	replayed := false
	if res != nil {
		got, replayed = res.Task, res.Replayed
	}
	mc.createStep(t, "create", title, given, mode, key, nil, "", &got, replayed, err)
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
	var inWin map[ConflictKey]string
	if mc.m.v2 {
		inWin = map[ConflictKey]string{}
	}
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
		mc.createStep(t, "window "+e.ProposalID, titles[e.ProposalID], false, order[i].DeliveryMode, "", inWin, e.ProposalID, &got, e.Replayed, err)
	}
}

func (mc *machine) reserve(t *rapid.T) {
	title := rapid.IntRange(0, len(modelTitles)-1).Draw(t, "title")
	p := rapid.SampledFrom([]string{"p1", "p2", "p3"}).Draw(t, "proposal")
	m := mc.m
	m.stamp()
	res, err := mc.svc.Reserve(mc.ctx, "s", ReserveRequest{ProposalID: p, Title: modelTitles[title].title, DeliveryMode: "result"})
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
	k := m.keyOf(title, false, "result")
	if h := m.holds(k); h != "" {
		wantConflict(t, "reserve", err, h)
		return
	}
	if err != nil || res.Reservation.ExpiresAtMs != m.now+1000 {
		t.Fatalf("reserve: %+v %v", res, err)
	}
	if old := m.res[p]; old != nil && m.holder[old.key] == "res:"+p {
		m.vacate(old.key, "res:"+p)
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
		m.vacate(r.key, "res:"+p)
		m.vacate(r.key, "ext:"+p)
		delete(m.res, p)
	}
}
