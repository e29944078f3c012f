package allocation_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/google/go-cmp/cmp"
)

type reply struct {
	status int
	body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("reply %d %s: %v", r.status, r.body, err)
	}
	return m
}

var httpClient = &http.Client{Timeout: 20 * time.Second}

func call(t *testing.T, method, url string, body any, header ...string) reply {
	t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, body: buf.Bytes()}
}

// allocationDigest hashes the allocation tables of a node's state (its
// snapshot stream's rows), leaving out the FSM's bookkeeping: what "a
// refused or losing request changed nothing" compares.
func allocationDigest(t *testing.T, n *cluster.Node) [32]byte {
	t.Helper()
	var buf bytes.Buffer
	if err := n.FSM().WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()[8 : buf.Len()-32]
	h := sha256.New()
	table := ""
	for len(b) > 0 {
		kind, size := b[0], binary.BigEndian.Uint32(b[1:5])
		body := b[5 : 5+size]
		b = b[5+size:]
		switch {
		case kind == 'T':
			if err := log.Unmarshal(body, &table); err != nil {
				t.Fatal(err)
			}
		case kind == 'R' && strings.HasPrefix(table, "allocation_"):
			fmt.Fprintf(h, "%s:%d:", table, len(body))
			h.Write(body)
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func wantStatus(t *testing.T, what string, r reply, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, status)
	}
}

// wantEnvelope requires the standard error envelope with code.
func wantEnvelope(t *testing.T, what string, r reply, status int, code string) {
	t.Helper()
	wantStatus(t, what, r, status)
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(r.body, &env) != nil || env.Error.Code != code {
		t.Fatalf("%s: %s, want error code %s", what, r.body, code)
	}
}

func TestHTTPRoutes(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	bases := []string{c.URL(0), c.URL(1), c.URL(2)}
	base := bases[(leader+1)%3] // a follower: every write is forwarded
	f := loadFixture(t)
	sp := base + "/v1/spaces/" + f.Space
	unchanged := func(what string, do func()) {
		t.Helper()
		before := allocationDigest(t, c.Node(c.Leader()))
		do()
		if allocationDigest(t, c.Node(c.Leader())) != before {
			t.Fatalf("%s changed the allocation tables", what)
		}
	}

	r := call(t, http.MethodPut, sp, map[string]any{"catalog": f.Catalog})
	wantStatus(t, "put space", r, 200)
	if got := r.json(t)["space"].(map[string]any); got["slug"] != f.Space || got["window_ms"] != 15000.0 ||
		!cmp.Equal(got["delivery_modes"], []any{"result"}) {
		t.Fatalf("put space: %s", r.body)
	}
	wantStatus(t, "get space", call(t, http.MethodGet, sp, nil), 200)
	unchanged("a malformed slug", func() {
		wantEnvelope(t, "bad slug", call(t, http.MethodPut, base+"/v1/spaces/Bad:Slug", map[string]any{"catalog": []any{}}), 422, "invalid")
	})
	unchanged("an unknown field", func() {
		wantEnvelope(t, "unknown field", call(t, http.MethodPut, sp, `{"catalog":[],"x":1}`), 422, "invalid")
	})
	r = call(t, http.MethodPost, sp+"/bind", map[string]any{"title": f.Titles[0].Title})
	wantStatus(t, "bind", r, 200)
	if m := r.json(t); m["work_item_id"] != "T1" || m["target"] != "task:multi-agent-research:slot:T1" ||
		!cmp.Equal(m["scores"], []any{map[string]any{"work_item_id": "T1", "intersection": 7.0, "union": 12.0},
			map[string]any{"work_item_id": "T3", "intersection": 3.0, "union": 18.0}}) {
		t.Fatalf("bind: %s", r.body)
	}

	// The seven fixture titles, concurrently through all three nodes:
	// exactly one 201 per slot, every other answer the exact flat 409.
	replies := make([]reply, len(f.Titles))
	var wg sync.WaitGroup
	for i, title := range f.Titles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = call(t, http.MethodPost, bases[i%3]+"/v1/spaces/"+f.Space+"/tasks", map[string]any{"title": title.Title, "delivery_mode": "result"})
		}()
	}
	wg.Wait()
	winners := map[string]float64{}
	for i, r := range replies {
		if r.status == 201 {
			task := r.json(t)["task"].(map[string]any)
			slot := f.Titles[i].Binds
			if _, dup := winners[slot]; dup || task["status"] != "open" || task["work_item_id"] != slot || task["version"] != 1.0 ||
				!cmp.Equal(task["conflict_key"], map[string]any{"kind": "create_task", "target": "task:multi-agent-research:slot:" + slot, "delivery_mode": "result"}) {
				t.Fatalf("a second or malformed 201 for %s: %s", slot, r.body)
			}
			winners[slot] = task["id"].(float64)
		}
	}
	if len(winners) != 2 {
		t.Fatalf("winners %v: want one per slot", winners)
	}
	for i, r := range replies {
		if r.status == 201 {
			continue
		}
		slot := f.Titles[i].Binds
		want := map[string]any{"error": "allocation_conflict", "code": "conflict_key_occupied",
			"conflict_key": map[string]any{"kind": "create_task", "target": "task:multi-agent-research:slot:" + slot, "delivery_mode": "result"},
			"outcome":      "redirect", "winner": map[string]any{"type": "task", "id": winners[slot], "status": "open"}, "write_occurred": false}
		if r.status != 409 || !cmp.Equal(r.json(t), want) {
			t.Fatalf("loser %d: %d %s, want %v", f.Titles[i].Task, r.status, r.body, want)
		}
	}
	unchanged("a loser", func() {
		wantStatus(t, "loser", call(t, http.MethodPost, sp+"/tasks", map[string]any{"title": f.Titles[1].Title, "delivery_mode": "result"}), 409)
	})
	unchanged("an empty title", func() {
		wantEnvelope(t, "empty title", call(t, http.MethodPost, sp+"/tasks", map[string]any{"title": " ", "delivery_mode": "result"}), 422, "invalid")
	})
	unchanged("an unknown delivery mode", func() {
		wantEnvelope(t, "bad mode", call(t, http.MethodPost, sp+"/tasks", map[string]any{"title": "x", "delivery_mode": "pdf"}), 422, "invalid")
	})

	// Idempotency-Key: the retry is the original 201, byte for byte.
	req := map[string]any{"title": "Distinct work", "delivery_mode": "result"}
	first := call(t, http.MethodPost, sp+"/tasks", req, "Idempotency-Key", "k-1")
	wantStatus(t, "keyed create", first, 201)
	unchanged("a keyed retry", func() {
		again := call(t, http.MethodPost, sp+"/tasks", req, "Idempotency-Key", "k-1")
		if again.status != 201 || !bytes.Equal(again.body, first.body) {
			t.Fatalf("retry: %d %s, want 201 %s", again.status, again.body, first.body)
		}
		other := call(t, http.MethodPost, sp+"/tasks", map[string]any{"title": "Other work", "delivery_mode": "result"}, "Idempotency-Key", "k-1")
		wantEnvelope(t, "key reuse", other, 409, "idempotency_conflict")
	})
	distinct := first.json(t)["task"].(map[string]any)["id"].(float64)

	// Supersede, then every action on the superseded task is the flat
	// task_superseded 409.
	t1 := winners["T1"]
	r = call(t, http.MethodPost, fmt.Sprintf("%s/tasks/%d/supersede", sp, int(distinct)), map[string]any{"surviving_task": t1, "reason": "allocation_duplicate"})
	wantStatus(t, "supersede", r, 200)
	if task := r.json(t)["task"].(map[string]any); task["status"] != "superseded" || task["superseded_by"] != t1 || task["reason"] != "allocation_duplicate" {
		t.Fatalf("supersede: %s", r.body)
	}
	unchanged("an action on a superseded task", func() {
		for _, action := range []string{"claim", "submit", "review", "reopen"} {
			r := call(t, http.MethodPost, fmt.Sprintf("%s/tasks/%d/transition", sp, int(distinct)), map[string]any{"action": action})
			if want := map[string]any{"error": "task_superseded", "superseded_by": t1, "write_occurred": false}; r.status != 409 || !cmp.Equal(r.json(t), want) {
				t.Fatalf("%s on a superseded task: %d %s", action, r.status, r.body)
			}
		}
	})
	r = call(t, http.MethodGet, sp+"/tasks", nil)
	wantStatus(t, "list", r, 200)
	if n := len(r.json(t)["tasks"].([]any)); n != 2 {
		t.Fatalf("list without superseded: %s", r.body)
	}
	r = call(t, http.MethodGet, sp+"/tasks?include_superseded=true&limit=2", nil)
	if m := r.json(t); len(m["tasks"].([]any)) != 2 || m["next_cursor"] == "" {
		t.Fatalf("first page: %s", r.body)
	}
	r = call(t, http.MethodGet, sp+"/tasks?include_superseded=true&limit=2&after="+r.json(t)["next_cursor"].(string), nil)
	if m := r.json(t); len(m["tasks"].([]any)) != 1 || m["next_cursor"] != "" {
		t.Fatalf("second page: %s", r.body)
	}
	wantEnvelope(t, "limit 129", call(t, http.MethodGet, sp+"/tasks?limit=129", nil), 422, "invalid")
	wantEnvelope(t, "forged cursor", call(t, http.MethodGet, sp+"/tasks?after=tasks.AAAA", nil), 422, "invalid")
	wantEnvelope(t, "no task", call(t, http.MethodGet, sp+"/tasks/999", nil), 404, "not_found")
	wantEnvelope(t, "bad id", call(t, http.MethodGet, sp+"/tasks/abc", nil), 422, "invalid")

	// Notes: the same identity twice is one note and the flat 409.
	t3 := winners["T3"]
	note := map[string]any{"kind": "post_review_note", "criterion_index": 1, "body": "Resumption is missing.", "delivery_mode": "result"}
	r = call(t, http.MethodPost, fmt.Sprintf("%s/tasks/%d/notes", sp, int(t3)), note)
	wantStatus(t, "note", r, 201)
	n := r.json(t)["note"].(map[string]any)
	unchanged("a second same-identity note", func() {
		r := call(t, http.MethodPost, fmt.Sprintf("%s/tasks/%d/notes", sp, int(t3)), note)
		want := map[string]any{"error": "allocation_conflict", "code": "conflict_key_occupied", "conflict_key": n["conflict_key"],
			"outcome": "redirect", "winner": map[string]any{"type": "note", "id": n["id"]}, "write_occurred": false}
		if r.status != 409 || !cmp.Equal(r.json(t), want) {
			t.Fatalf("second note: %d %s", r.status, r.body)
		}
	})
	note["criterion_index"] = 2
	wantStatus(t, "distinct criterion", call(t, http.MethodPost, fmt.Sprintf("%s/tasks/%d/notes", sp, int(t3)), note), 201)

	// Reserve-then-mutate: a live reservation makes creates idle; abort
	// frees the key with no phantom.
	r = call(t, http.MethodPost, sp+"/reservations", map[string]any{"proposal_id": "ext-1", "title": "External intent", "delivery_mode": "result"})
	wantStatus(t, "reserve", r, 201)
	unchanged("a create on a reserved key", func() {
		r := call(t, http.MethodPost, sp+"/tasks", map[string]any{"title": "external   INTENT", "delivery_mode": "result"})
		want := map[string]any{"error": "allocation_conflict", "code": "conflict_key_reserved",
			"conflict_key": map[string]any{"kind": "create_task", "target": "task:multi-agent-research:external intent", "delivery_mode": "result"},
			"outcome":      "idle", "winner": map[string]any{"type": "reserved_intent", "id": "ext-1"}, "reserved_proposal_id": "ext-1",
			"retry_after_ms": 200.0, "write_occurred": false}
		if r.status != 409 || !cmp.Equal(r.json(t), want) {
			t.Fatalf("reserved: %d %s", r.status, r.body)
		}
	})
	wantStatus(t, "abort", call(t, http.MethodPost, sp+"/reservations/ext-1/abort", nil), 200)
	wantStatus(t, "create after abort", call(t, http.MethodPost, sp+"/tasks", map[string]any{"title": "External intent", "delivery_mode": "result"}), 201)

	// A window: processing order, 201/409/422 per proposal; the loser to
	// an earlier proposal of the window names its reservation.
	r = call(t, http.MethodPost, sp+"/windows", map[string]any{"proposals": []map[string]any{
		{"proposal_id": "a", "title": "Fresh idea", "delivery_mode": "result", "received_seq": 2},
		{"proposal_id": "b", "title": "fresh  IDEA", "delivery_mode": "result", "received_seq": 3},
		{"proposal_id": "c", "title": "", "delivery_mode": "result", "received_seq": 1},
	}})
	wantStatus(t, "window", r, 200)
	var w struct {
		Results []struct {
			ProposalID string         `json:"proposal_id"`
			Status     int            `json:"status"`
			Body       map[string]any `json:"body"`
		} `json:"results"`
	}
	if err := json.Unmarshal(r.body, &w); err != nil || len(w.Results) != 3 {
		t.Fatalf("window: %s", r.body)
	}
	if w.Results[0].ProposalID != "c" || w.Results[0].Status != 422 || w.Results[1].ProposalID != "a" || w.Results[1].Status != 201 ||
		w.Results[2].ProposalID != "b" || w.Results[2].Status != 409 || w.Results[2].Body["code"] != "conflict_key_reserved" ||
		w.Results[2].Body["reserved_proposal_id"] != "a" {
		t.Fatalf("window results: %s", r.body)
	}
	unchanged("a window of 129", func() {
		ps := make([]map[string]any, 129)
		for i := range ps {
			ps[i] = map[string]any{"proposal_id": fmt.Sprint(i), "title": "t", "delivery_mode": "result"}
		}
		wantEnvelope(t, "129 proposals", call(t, http.MethodPost, sp+"/windows", map[string]any{"proposals": ps}), 422, "invalid")
	})

	// The reads of spaces, reservations, occupancy and duplicates.
	r = call(t, http.MethodGet, base+"/v1/spaces?limit=1", nil)
	wantStatus(t, "list spaces", r, 200)
	if m := r.json(t); len(m["spaces"].([]any)) != 1 || m["spaces"].([]any)[0].(map[string]any)["slug"] != f.Space || m["next_cursor"] != "" {
		t.Fatalf("list spaces: %s", r.body)
	}
	r = call(t, http.MethodGet, sp+"/occupancy?limit=128", nil)
	wantStatus(t, "occupancy", r, 200)
	held := map[string]any{}
	for _, o := range r.json(t)["occupancy"].([]any) {
		o := o.(map[string]any)
		held[o["conflict_key"].(map[string]any)["target"].(string)] = o["winner"]
	}
	if w := held["task:multi-agent-research:slot:T1"]; !cmp.Equal(w, map[string]any{"type": "task", "id": winners["T1"], "status": "open"}) {
		t.Fatalf("occupancy of T1: %v in %s", w, r.body)
	}
	r = call(t, http.MethodGet, sp+"/reservations", nil)
	wantStatus(t, "reservations", r, 200)
	if _, ok := r.json(t)["reservations"].([]any); !ok {
		t.Fatalf("reservations: %s", r.body)
	}
	r = call(t, http.MethodGet, sp+"/duplicates", nil)
	if wantStatus(t, "duplicates", r, 200); string(r.body) != `{"duplicates":[],"next_cursor":""}`+"\n" && string(r.body) != `{"duplicates":[],"next_cursor":""}` {
		t.Fatalf("duplicates: %q", r.body)
	}
	wantEnvelope(t, "a bad cursor", call(t, http.MethodGet, sp+"/occupancy?after=occupancy.AAAA", nil), 422, "invalid")
	c.WaitConverged(20 * time.Second)
}
