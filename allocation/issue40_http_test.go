package allocation_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/google/go-cmp/cmp"
)

// Issue 40 through HTTP on a 3-node cluster (which enables version 2 of
// the allocation commands once every member serves it), each call to a
// follower: an Idempotency-Key retry stays its 201 after the space
// dropped the mode (15); a catalog change rebinds the open task and
// lists the duplicate (14); a create on a held finished task's key, or
// on a superseded task's key, is the 409 naming the held task or the
// survivor (18, 16); an unlisted work item is 422 unknown_work_item and
// a title of "\u0000" 422 (19).
func TestHTTPIssue40(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	base := c.URL((leader + 1) % 3)
	f := loadFixture(t)
	sp := base + "/v1/spaces/" + f.Space
	put := func(catalog any, modes ...string) reply {
		t.Helper()
		r := call(t, http.MethodPut, sp, map[string]any{"catalog": catalog, "delivery_modes": modes})
		wantStatus(t, "put", r, 200)
		return r
	}
	create := func(body map[string]any, key string) reply {
		t.Helper()
		if key == "" {
			return call(t, http.MethodPost, sp+"/tasks", body)
		}
		return call(t, http.MethodPost, sp+"/tasks", body, "Idempotency-Key", key)
	}
	winner := func(r reply) map[string]any {
		t.Helper()
		wantStatus(t, "loser", r, 409)
		return r.json(t)["winner"].(map[string]any)
	}
	put([]any{}, "result", "draft")

	// 15.
	first := create(map[string]any{"title": f.Titles[0].Title, "delivery_mode": "draft"}, "k-draft")
	wantStatus(t, "create in draft", first, 201)
	put([]any{}, "result")
	again := create(map[string]any{"title": f.Titles[0].Title, "delivery_mode": "draft"}, "k-draft")
	if again.status != 201 || !cmp.Equal(again.json(t), first.json(t)) {
		t.Fatalf("retry after the mode was dropped: %d %s, want %s", again.status, again.body, first.body)
	}

	// 14: two open tasks on title keys, then the catalog lists T1 (the
	// draft task moves to T1 in its mode too: three rebound).
	one := create(map[string]any{"title": f.Titles[0].Title, "delivery_mode": "result"}, "")
	two := create(map[string]any{"title": f.Titles[2].Title, "delivery_mode": "result"}, "")
	wantStatus(t, "one", one, 201)
	wantStatus(t, "two", two, 201)
	oneID := one.json(t)["task"].(map[string]any)["id"]
	twoID := two.json(t)["task"].(map[string]any)["id"]
	r := put(f.Catalog, "result")
	m := r.json(t)
	dups := m["duplicates"].(map[string]any)["duplicates"].([]any)
	if m["rebound"] != 3.0 || len(dups) != 1 || dups[0].(map[string]any)["task_id"] != twoID ||
		!cmp.Equal(dups[0].(map[string]any)["held_by"], map[string]any{"type": "task", "id": oneID, "status": "open"}) {
		t.Fatalf("put answer: %s", r.body)
	}
	if w := winner(create(map[string]any{"title": f.Titles[1].Title, "delivery_mode": "result"}, "")); w["id"] != oneID {
		t.Fatalf("create after the catalog change names %v, want task %v", w, oneID)
	}
	r = call(t, http.MethodGet, sp+"/duplicates", nil)
	if wantStatus(t, "duplicates", r, 200); len(r.json(t)["duplicates"].([]any)) != 1 {
		t.Fatalf("duplicates: %s", r.body)
	}

	// 16: the earliest is superseded into the duplicate, which takes the key.
	wantStatus(t, "supersede", call(t, http.MethodPost, sp+"/tasks/"+itoa(oneID)+"/supersede", map[string]any{"surviving_task": twoID, "reason": "allocation_duplicate"}), 200)
	if w := winner(create(map[string]any{"title": f.Titles[0].Title, "delivery_mode": "result"}, "")); w["id"] != twoID {
		t.Fatalf("create on the superseded task's key names %v, want the survivor %v", w, twoID)
	}

	// 18: a hold on a finished task keeps its key.
	h := create(map[string]any{"title": "held work", "delivery_mode": "result"}, "")
	hID := h.json(t)["task"].(map[string]any)["id"]
	wantStatus(t, "withdraw", call(t, http.MethodPost, sp+"/tasks/"+itoa(hID)+"/transition", map[string]any{"action": "withdraw"}), 200)
	wantStatus(t, "hold", call(t, http.MethodPost, sp+"/tasks/"+itoa(hID)+"/hold", map[string]any{"hold": true}), 200)
	if w := winner(create(map[string]any{"title": "held work", "delivery_mode": "result"}, "")); w["id"] != hID || w["status"] != "withdrawn" {
		t.Fatalf("create on the held key names %v", w)
	}

	// 19.
	r = create(map[string]any{"title": "typo", "delivery_mode": "result", "work_item_id": "T9"}, "")
	wantEnvelope(t, "unlisted work item", r, 422, "invalid")
	if d := r.json(t)["error"].(map[string]any)["detail"]; !cmp.Equal(d, map[string]any{"reason": "unknown_work_item", "work_item_id": "T9"}) {
		t.Fatalf("unlisted work item: %s", r.body)
	}
	wantEnvelope(t, "a NUL title", create(map[string]any{"title": "\u0000", "delivery_mode": "result"}, ""), 422, "invalid")
	c.WaitConverged(20 * time.Second)
}

func itoa(v any) string {
	n := v.(float64)
	return strconv.FormatFloat(n, 'f', 0, 64)
}
