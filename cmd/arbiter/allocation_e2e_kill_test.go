//go:build unix

package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const (
	e2eKillSpace     = "kill"
	e2eWindowWriters = 3 // goroutines posting windows to the leader
	e2eMinWindows    = 6 // windows acknowledged before the SIGKILL
)

// e2eKillWindow is one window a writer posted: its Idempotency-Key, its
// proposals, and its answer if it had one before the kill.
type e2eKillWindow struct {
	key       string
	proposals []map[string]any
	titles    [2]string // its two keys' titles
	answer    *e2eReply // nil: no answer (in flight at the kill, or after)
}

// e2eKillWindowOf is writer w's n-th window: titles A and B, and A again
// (so the window has a 201, a 201 and a 409).
func e2eKillWindowOf(w, n int) *e2eKillWindow {
	a, b := fmt.Sprintf("kill w%d n%d a", w, n), fmt.Sprintf("kill w%d n%d b", w, n)
	return &e2eKillWindow{key: fmt.Sprintf("kill-%d-%d", w, n), titles: [2]string{a, b}, proposals: []map[string]any{
		{"proposal_id": "a", "title": a, "delivery_mode": "result"},
		{"proposal_id": "b", "title": b, "delivery_mode": "result"},
		{"proposal_id": "a2", "title": a, "delivery_mode": "result"},
	}}
}

// e2eAllocKillDuringWindows has writers post windows straight to the
// leader, each with an Idempotency-Key, and SIGKILLs the leader once
// some are acknowledged, so that a window is in flight. Then, through the
// survivors and a new leader, every window must be all or nothing: its
// two tasks are both there or neither; a retry with its key answers the
// original results when they are there (the window's own tasks, never a
// 409 against them), and applies it once when not; an acknowledged
// window's retry answers its first answer. It returns the killed node.
func e2eAllocKillDuringWindows(ctx context.Context, t *testing.T, cl *e2eCluster) *e2eNode {
	e2ePutSpace(ctx, t, cl, e2eKillSpace, nil)
	leader, term := cl.leader(ctx, nil)
	var mu sync.Mutex
	var windows []*e2eKillWindow
	var acked atomic.Int64
	var wg sync.WaitGroup
	for w := range e2eWindowWriters {
		wg.Go(func() {
			for n := 0; ; n++ {
				win := e2eKillWindowOf(w, n)
				mu.Lock()
				windows = append(windows, win)
				mu.Unlock()
				r, err := cl.c.raw(ctx, http.MethodPost, leader.url()+"/v1/spaces/"+e2eKillSpace+"/windows", map[string]any{"proposals": win.proposals}, win.key)
				if e2eUnsettled(r, err) {
					return // the leader is gone; this window's fate is checked below
				}
				if r.status != http.StatusOK {
					t.Errorf("window %s: %v", win.key, r)
					return
				}
				mu.Lock()
				win.answer = &r
				mu.Unlock()
				acked.Add(1)
			}
		})
	}
	cl.eventually(ctx, 15*time.Second, "windows acknowledged before the kill", func() (bool, string) {
		return acked.Load() >= e2eMinWindows, fmt.Sprintf("%d acknowledged", acked.Load())
	})
	leader.signal(t, syscall.SIGKILL)
	if leader.waitExit(5*time.Second) == nil {
		t.Fatalf("%s still running 5s after SIGKILL", leader.id)
	}
	wg.Wait()
	newLeader, newTerm := cl.leader(ctx, leader)
	if newTerm <= term {
		t.Errorf("new leader %s in term %d, not after term %d", newLeader.id, newTerm, term)
	}
	survivors := cl.others(leader)
	t.Logf("SIGKILLed leader %s with %d windows acknowledged, %d posted; %s leads in term %d", leader.id, acked.Load(), len(windows), newLeader.id, newTerm)

	before := e2eTasksByTitle(t, e2eListTasks(ctx, t, cl, survivors, e2eKillSpace))
	applied, absent := 0, 0 // of the windows without an answer
	for _, win := range windows {
		e2eCheckKillWindow(ctx, t, cl, survivors, win, before)
		if _, there := before[win.titles[0]]; win.answer == nil && there {
			applied++
		} else if win.answer == nil {
			absent++
		}
	}
	after := e2eListTasks(ctx, t, cl, survivors, e2eKillSpace)
	if got := len(e2eTasksByTitle(t, after)); got != len(after) || got != 2*len(windows) {
		t.Errorf("%d tasks with %d titles after every window was retried; want 2 per window, %d", len(after), got, 2*len(windows))
	}
	t.Logf("%d windows; of the %d without an answer, %d had been applied (their retry replayed) and %d had not (their retry applied them): each all or nothing, applied once",
		len(windows), applied+absent, applied, absent)
	return leader
}

// e2eTasksByTitle indexes tasks by title, failing t on a title twice (a
// window applied twice).
func e2eTasksByTitle(t *testing.T, tasks []e2eTask) map[string]e2eTask {
	t.Helper()
	out := map[string]e2eTask{}
	for _, task := range tasks {
		if prev, dup := out[task.Title]; dup {
			t.Errorf("tasks %d and %d share the title %q: a window was applied twice", prev.ID, task.ID, task.Title)
		}
		out[task.Title] = task
	}
	return out
}

// e2eCheckKillWindow checks one window after the kill against before,
// the tasks there before any retry, and retries it (twice).
func e2eCheckKillWindow(ctx context.Context, t *testing.T, cl *e2eCluster, nodes []*e2eNode, win *e2eKillWindow, before map[string]e2eTask) {
	t.Helper()
	_, hasA := before[win.titles[0]]
	_, hasB := before[win.titles[1]]
	if hasA != hasB {
		t.Errorf("window %s was half applied: task %q present %v, task %q present %v", win.key, win.titles[0], hasA, win.titles[1], hasB)
	}
	if win.answer != nil && !hasA {
		t.Errorf("window %s was acknowledged and is not there: %v", win.key, win.answer)
	}
	path := "/v1/spaces/" + e2eKillSpace + "/windows"
	retry := cl.allocDo(ctx, nodes, http.MethodPost, path, map[string]any{"proposals": win.proposals}, win.key)
	var res e2eWindowResult
	e2eDecodeReply(t, "retry of window "+win.key, retry, http.StatusOK, &res)
	if win.answer != nil && !e2eSameJSON(t, retry.body, win.answer.body) {
		t.Errorf("window %s retried: %v\nwant its first answer %v", win.key, retry, win.answer)
	}
	// Whether replayed or applied now, the answer is the window's own:
	// a 201 for each title and a 409 for the repeat, naming the proposal
	// of the window that took its key (conflict_key_reserved).
	created := map[string]int{}     // title -> the task this answer names for it
	proposal := map[string]string{} // title -> the proposal that created it
	order := e2eWindowOrder(win.proposals)
	if len(res.Results) != len(order) {
		t.Fatalf("window %s retried: %v", win.key, retry)
	}
	for i, e := range res.Results {
		entry := e2eReply{status: e.Status, body: e.Body}
		title := order[i]["title"].(string)
		target := e2eTaskTarget(e2eKillSpace, title, "")
		if e.ProposalID != order[i]["proposal_id"] {
			t.Errorf("window %s: result %d is %s, want %s", win.key, i, e.ProposalID, order[i]["proposal_id"])
		}
		if _, ok := created[title]; ok {
			e2eWantBody(t, "the repeat in window "+win.key, entry, http.StatusConflict, e2eReservedLoserBody(t, target, proposal[title]))
			continue
		}
		task := e2eWantTask(t, "window "+win.key+" "+e.ProposalID, entry, e2eKillSpace, title, target, "")
		if prev, ok := before[title]; ok && prev.ID != task.ID {
			t.Errorf("window %s retried: task %d for %q, but task %d was there before the retry: the window ran twice", win.key, task.ID, title, prev.ID)
		}
		created[title], proposal[title] = task.ID, e.ProposalID
	}
	if _, a := created[win.titles[0]]; !a || len(created) != 2 {
		t.Errorf("window %s: created %v, want its two titles %v", win.key, created, win.titles)
	}
	again := cl.allocDo(ctx, nodes, http.MethodPost, path, map[string]any{"proposals": win.proposals}, win.key)
	if !e2eSameJSON(t, again.body, retry.body) {
		t.Errorf("window %s retried twice answered differently:\n%v\n%v", win.key, retry, again)
	}
}
