//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// e2eWindowResult is the answer of POST .../windows.
type e2eWindowResult struct {
	Results []struct {
		ProposalID string          `json:"proposal_id"`
		Status     int             `json:"status"`
		Body       json.RawMessage `json:"body"`
	} `json:"results"`
}

// e2eAllocWindows posts the fixture's empty-board windows (the four T1
// titles, the three T3 titles, all seven), each in a fresh space: the
// results come in this test's processing order, the first proposal on
// each slot creates and every later one is the spec's 409
// conflict_key_reserved naming that proposal, one task per slot; a retry with the window's Idempotency-Key answers the
// same. Then a window mixing received_seq, a loser to an earlier window,
// a blank title and an unknown delivery mode: 201, 409 and 422 each where
// this test's order puts them.
func e2eAllocWindows(ctx context.Context, t *testing.T, cl *e2eCluster, fx e2eFixture) {
	var t1Winner int
	for gi, g := range []struct {
		space string
		tasks []int
	}{{"win-t1", []int{91, 92, 93, 94}}, {"win-t3", []int{95, 96, 97}}, {"win-all", []int{91, 92, 93, 94, 95, 96, 97}}} {
		e2ePutSpace(ctx, t, cl, g.space, fx.Catalog)
		var proposals []map[string]any
		slotOf := map[string]string{}
		for _, task := range g.tasks {
			for _, ft := range fx.Titles {
				if ft.Task == task {
					id := fmt.Sprintf("p%d", task)
					proposals = append(proposals, map[string]any{"proposal_id": id, "title": ft.Title, "delivery_mode": "result"})
					slotOf[id] = ft.Binds
				}
			}
		}
		path, key := "/v1/spaces/"+g.space+"/windows", "window-"+g.space
		r := cl.allocDo(ctx, e2eRotate(cl.nodes, gi), http.MethodPost, path, map[string]any{"proposals": proposals}, key)
		var res e2eWindowResult
		e2eDecodeReply(t, g.space+" window", r, http.StatusOK, &res)
		order := e2eWindowOrder(proposals)
		if len(res.Results) != len(order) {
			t.Fatalf("%s window: %d results for %d proposals: %v", g.space, len(res.Results), len(order), r)
		}
		winners := map[string]int{}
		winnerProposal := map[string]string{}
		for i, e := range res.Results {
			p := order[i]
			id, title := p["proposal_id"].(string), p["title"].(string)
			if e.ProposalID != id {
				t.Fatalf("%s window: result %d is %s, this test's order puts %s there: %v", g.space, i, e.ProposalID, id, r)
			}
			slot := slotOf[id]
			target := e2eTaskTarget(g.space, title, slot)
			entry := e2eReply{status: e.Status, body: e.Body}
			if _, ok := winners[slot]; ok {
				e2eWantBody(t, g.space+" window loser "+id, entry, http.StatusConflict, e2eReservedLoserBody(t, target, winnerProposal[slot]))
				continue
			}
			winners[slot] = e2eWantTask(t, g.space+" window winner "+id, entry, g.space, title, target, slot).ID
			winnerProposal[slot] = id
		}
		if tasks := e2eListTasks(ctx, t, cl, cl.nodes, g.space); len(tasks) != len(winners) {
			t.Errorf("%s: %d tasks after the window, want one per slot (%v)", g.space, len(tasks), winners)
		}
		again := cl.allocDo(ctx, e2eRotate(cl.nodes, gi+1), http.MethodPost, path, map[string]any{"proposals": proposals}, key)
		if again.status != http.StatusOK || !e2eSameJSON(t, again.body, r.body) {
			t.Errorf("%s window retried with its Idempotency-Key: %v\nwant the first answer %v", g.space, again, r)
		}
		t1Winner = winners["T1"]
	}
	e2eMixedWindow(ctx, t, cl, fx, t1Winner)
}

// e2eMixedWindow posts to win-all, where the T1 slot is held by task
// t1Winner, a window whose processing order this test computes: an
// unknown delivery mode (422), a T1 title (409), then at received_seq 1 a
// fresh title (201) and a blank one (422) in payload_sha256 order, and at
// received_seq 2 the fresh title again (409 naming the proposal of the
// window that took its key).
func e2eMixedWindow(ctx context.Context, t *testing.T, cl *e2eCluster, fx e2eFixture, t1Winner int) {
	const space = "win-all"
	proposals := []map[string]any{
		{"proposal_id": "m1", "title": "Fresh idea", "delivery_mode": "result", "received_seq": 2},
		{"proposal_id": "m2", "title": "fresh   IDEA", "delivery_mode": "result", "received_seq": 1},
		{"proposal_id": "m3", "title": " \t ", "delivery_mode": "result", "received_seq": 1},
		{"proposal_id": "m4", "title": "Another idea", "delivery_mode": "pdf"},
		{"proposal_id": "m5", "title": fx.Titles[1].Title, "delivery_mode": "result"},
	}
	r := cl.allocDo(ctx, cl.nodes, http.MethodPost, "/v1/spaces/"+space+"/windows", map[string]any{"proposals": proposals}, "window-mixed")
	var res e2eWindowResult
	e2eDecodeReply(t, "mixed window", r, http.StatusOK, &res)
	order := e2eWindowOrder(proposals)
	if len(res.Results) != len(order) {
		t.Fatalf("mixed window: %v", r)
	}
	for i, e := range res.Results {
		p := order[i]
		id, title := p["proposal_id"].(string), p["title"].(string)
		entry := e2eReply{status: e.Status, body: e.Body}
		what := "mixed window " + id
		bound, _ := e2eBind(title, fx.Catalog)
		if e.ProposalID != id {
			t.Fatalf("mixed window: result %d is %s, this test's order puts %s there: %v", i, e.ProposalID, id, r)
		}
		switch id {
		case "m3", "m4":
			if e.Status != http.StatusUnprocessableEntity || e2eErrorCode(entry) != "invalid" {
				t.Errorf("%s: %v, want 422 invalid", what, entry)
			}
		case "m5":
			e2eWantBody(t, what, entry, http.StatusConflict, e2eLoserBody(t, e2eTaskTarget(space, title, bound), t1Winner))
		case "m2":
			e2eWantTask(t, what, entry, space, title, e2eTaskTarget(space, title, bound), bound)
		case "m1":
			e2eWantBody(t, what, entry, http.StatusConflict, e2eReservedLoserBody(t, e2eTaskTarget(space, title, bound), "m2"))
		}
	}
}
