//go:build unix

package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
)

// e2eSlotHolder is the task that holds slot in space (after the race).
func e2eSlotHolder(ctx context.Context, t *testing.T, cl *e2eCluster, space, slot string) int {
	t.Helper()
	for _, task := range e2eListTasks(ctx, t, cl, cl.nodes, space) {
		if task.Status == "open" && task.ConflictKey.Target == e2eTaskTarget(space, "", slot) {
			return task.ID
		}
	}
	t.Fatalf("no open task holds %s in %s", slot, space)
	return 0
}

// e2eAllocNotes posts one review note three times at once, each through
// another node and with the body's whitespace changed (the same identity
// after normalize_note_body): one 201 on the note target this test
// computes, two times the spec's 409 naming that note; a retry of the
// winner with its Idempotency-Key answers its 201 again. Distinct
// criteria (2, null) make two more notes.
func e2eAllocNotes(ctx context.Context, t *testing.T, cl *e2eCluster, fx e2eFixture) {
	space := fx.Space
	task := e2eSlotHolder(ctx, t, cl, space, "T3")
	path := fmt.Sprintf("/v1/spaces/%s/tasks/%d/notes", space, task)
	const body = "Checkpoints are not covered."
	one := 1
	target := e2eNoteTarget(space, task, &one, "", body) // open mode: every caller is the principal ""
	variants := []string{body, "  Checkpoints are   not covered. ", "Checkpoints\tare not\u00a0covered.\n"}
	replies := make([]e2eReply, len(variants))
	requests := make([]map[string]any, len(variants))
	var wg sync.WaitGroup
	for i, v := range variants {
		requests[i] = map[string]any{"kind": "post_review_note", "criterion_index": 1, "body": v, "delivery_mode": "result"}
		wg.Go(func() {
			replies[i] = cl.allocDo(ctx, e2eRotate(cl.nodes, i), http.MethodPost, path, requests[i], fmt.Sprintf("note-%d", i))
		})
	}
	wg.Wait()
	type note struct {
		ID             int    `json:"id"`
		TaskID         int    `json:"task_id"`
		CriterionIndex *int   `json:"criterion_index"`
		Principal      string `json:"principal"`
		ConflictKey    e2eKey `json:"conflict_key"`
	}
	winner, won := note{}, -1
	for i, r := range replies {
		if r.status != http.StatusCreated {
			continue
		}
		var res struct {
			Note note `json:"note"`
		}
		e2eDecodeReply(t, "note", r, http.StatusCreated, &res)
		if won >= 0 {
			t.Errorf("two 201s for one note identity: %v and %v", replies[won], r)
		}
		winner, won = res.Note, i
	}
	wantKey := e2eKey{Kind: "post_review_note", Target: target, DeliveryMode: "result"}
	if won < 0 || winner.ConflictKey != wantKey || winner.TaskID != task || winner.CriterionIndex == nil || *winner.CriterionIndex != 1 || winner.Principal != "" {
		t.Fatalf("notes: %v\nwant one 201 on %+v", replies, wantKey)
	}
	loser := fmt.Sprintf(`{"error":"allocation_conflict","code":"conflict_key_occupied","conflict_key":{"kind":"post_review_note","target":%q,"delivery_mode":"result"},"outcome":"redirect","winner":{"type":"note","id":%d},"write_occurred":false}`, target, winner.ID)
	for i, r := range replies {
		if i != won {
			e2eWantBody(t, "same-identity note", r, http.StatusConflict, loser)
		}
	}
	again := cl.allocDo(ctx, cl.nodes, http.MethodPost, path, requests[won], fmt.Sprintf("note-%d", won))
	if again.status != http.StatusCreated || !e2eSameJSON(t, again.body, replies[won].body) {
		t.Errorf("the winning note retried with its Idempotency-Key: %v\nwant %v", again, replies[won])
	}
	for i, crit := range []any{2, nil} {
		r := cl.allocDo(ctx, e2eRotate(cl.nodes, i), http.MethodPost, path, map[string]any{"kind": "post_review_note", "criterion_index": crit, "body": body, "delivery_mode": "result"}, fmt.Sprintf("note-crit-%d", i))
		e2eDecodeReply(t, fmt.Sprintf("note on criterion %v", crit), r, http.StatusCreated, nil)
	}
	var page struct {
		Notes []note `json:"notes"`
	}
	e2eDecodeReply(t, "notes", cl.allocDo(ctx, cl.nodes, http.MethodGet, path, nil, ""), http.StatusOK, &page)
	if len(page.Notes) != 3 {
		t.Errorf("task %d has %d notes, want 3 (one per criterion)", task, len(page.Notes))
	}
}

// e2eAllocSupersede creates a leftover task and supersedes it in favour
// of the T1 task: the answer records the survivor and the reason; every
// action on it is the spec's task_superseded 409; lists leave it out
// unless asked; and its key stays occupied, by the survivor.
func e2eAllocSupersede(ctx context.Context, t *testing.T, cl *e2eCluster, fx e2eFixture) {
	space := fx.Space
	survivor := e2eSlotHolder(ctx, t, cl, space, "T1")
	const title = "Leftover: collect the reading list"
	if bound, _ := e2eBind(title, fx.Catalog); bound != "" {
		t.Fatalf("the leftover title binds %s", bound)
	}
	create := func(key string) e2eReply {
		return cl.allocDo(ctx, cl.nodes, http.MethodPost, "/v1/spaces/"+space+"/tasks", map[string]any{"title": title, "delivery_mode": "result"}, key)
	}
	target := e2eTaskTarget(space, title, "")
	leftover := e2eWantTask(t, "leftover", create("leftover-1"), space, title, target, "").ID
	taskPath := fmt.Sprintf("/v1/spaces/%s/tasks/%d", space, leftover)
	r := cl.allocDo(ctx, cl.nodes, http.MethodPost, taskPath+"/supersede", map[string]any{"surviving_task": survivor, "reason": "allocation_duplicate"}, "")
	var res struct {
		Task e2eTask `json:"task"`
	}
	e2eDecodeReply(t, "supersede", r, http.StatusOK, &res)
	if res.Task.Status != "superseded" || res.Task.SupersededBy == nil || *res.Task.SupersededBy != survivor || res.Task.Reason != "allocation_duplicate" {
		t.Errorf("supersede: %v", r)
	}
	for i, action := range []string{"claim", "submit", "review", "reopen", "withdraw"} {
		r := cl.allocDo(ctx, e2eRotate(cl.nodes, i), http.MethodPost, taskPath+"/transition", map[string]any{"action": action}, "")
		e2eWantBody(t, action+" of a superseded task", r, http.StatusConflict, fmt.Sprintf(`{"error":"task_superseded","superseded_by":%d,"write_occurred":false}`, survivor))
	}
	listed := func(query string) bool {
		var page struct {
			Tasks []e2eTask `json:"tasks"`
		}
		e2eDecodeReply(t, "list", cl.allocDo(ctx, cl.nodes, http.MethodGet, "/v1/spaces/"+space+"/tasks"+query, nil, ""), http.StatusOK, &page)
		return slices.ContainsFunc(page.Tasks, func(task e2eTask) bool { return task.ID == leftover })
	}
	if listed("") || !listed("?include_superseded=true") || !listed("?status=superseded") {
		t.Errorf("lists: superseded task %d shown by default, or hidden when asked for", leftover)
	}
	// Occupancy stays on the survivor: the leftover's title again is the
	// spec's 409 naming the survivor.
	e2eWantBody(t, "the leftover's title again", create("leftover-2"), http.StatusConflict, e2eLoserBody(t, target, survivor))
}
