package allocation_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// TestHTTPReservationExpiry: through a 3-node cluster, a reservation in a
// space with a one-minute window holds its key (a create is the reserved
// 409) until FSM time reaches its expiry, which the test reaches by moving
// the nodes' clocks (clustertest's Advance); then the leader's Tick drops it
// (the feed's allocation_expired event, stamped at or after expires_at_ms),
// the key is free (a create is 201, no phantom), and the expired proposal
// can be neither committed nor aborted. Every replica ends in one state.
func TestHTTPReservationExpiry(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 3})
	leader := c.WaitLeader(10 * time.Second)
	base := c.URL((leader + 1) % 3)
	sp := base + "/v1/spaces/short"
	const window = time.Minute
	wantStatus(t, "put", call(t, http.MethodPut, sp, map[string]any{"catalog": []any{}, "window_ms": window.Milliseconds()}), 200)

	intent := map[string]any{"proposal_id": "ext-1", "title": "External  Intent", "delivery_mode": "result"}
	r := call(t, http.MethodPost, sp+"/reservations", intent)
	wantStatus(t, "reserve", r, 201)
	res := r.json(t)["reservation"].(map[string]any)
	expiresAt := int64(res["expires_at_ms"].(float64))

	create := map[string]any{"title": "external intent", "delivery_mode": "result"}
	r = call(t, http.MethodPost, sp+"/tasks", create)
	if r.status != 409 || r.json(t)["code"] != "conflict_key_reserved" {
		t.Fatalf("create during the reservation: %d %s", r.status, r.body)
	}
	if _, ok := findEvent(t, base, "allocation_expired", "short/ext-1"); ok {
		t.Fatal("allocation_expired before the window passed")
	}
	c.Advance(window)
	var expired feedEvent
	if !c.Eventually(10*time.Second, func() bool {
		var ok bool
		expired, ok = findEvent(t, base, "allocation_expired", "short/ext-1")
		return ok
	}) {
		t.Fatal("no allocation_expired event for ext-1 within 10s")
	}
	if expired.TimeMs < expiresAt {
		t.Fatalf("expired at FSM time %d, before its expiry %d", expired.TimeMs, expiresAt)
	}
	r = call(t, http.MethodPost, sp+"/tasks", create)
	wantStatus(t, "create after expiry", r, 201)
	task := r.json(t)["task"].(map[string]any)
	if task["conflict_key"].(map[string]any)["target"] != "task:short:external intent" {
		t.Fatalf("task after expiry: %s", r.body)
	}
	wantEnvelope(t, "commit after expiry", call(t, http.MethodPost, sp+"/reservations/ext-1/commit",
		map[string]any{"winner": map[string]any{"type": "issue", "id": 1}}), 404, "not_found")
	wantEnvelope(t, "abort after expiry", call(t, http.MethodPost, sp+"/reservations/ext-1/abort", nil), 404, "not_found")
	// The key is the task's now: a new reservation loses to it.
	r = call(t, http.MethodPost, sp+"/reservations", intent)
	if r.status != 409 || r.json(t)["code"] != "conflict_key_occupied" {
		t.Fatalf("reserve after the task took the key: %d %s", r.status, r.body)
	}
	c.WaitConverged(20 * time.Second)
}

type feedEvent struct {
	Kind   string `json:"kind"`
	Key    string `json:"key"`
	TimeMs int64  `json:"time_ms"`
}

// findEvent pages the change feed of the node at base for an event.
func findEvent(t *testing.T, base, kind, key string) (feedEvent, bool) {
	t.Helper()
	after := uint64(0)
	for pages := 0; pages < 100; pages++ {
		r := call(t, http.MethodGet, fmt.Sprintf("%s/v1/changes?after=%d&limit=128", base, after), nil)
		wantStatus(t, "changes", r, 200)
		var page struct {
			Events []feedEvent `json:"events"`
			Next   uint64      `json:"next"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Events {
			if e.Kind == kind && e.Key == key {
				return e, true
			}
		}
		if len(page.Events) == 0 {
			return feedEvent{}, false
		}
		after = page.Next
	}
	t.Fatal("more than 100 pages of changes")
	return feedEvent{}, false
}
