//go:build unix

package main

// The end-to-end test of the allocation domain (issue 14, "How it is
// checked"): three real `arbiter serve` processes, driven over HTTP by a
// client that knows the spec only through its own implementation
// (allocation_e2e_spec_test.go). The phases are in
// allocation_e2e_phases_test.go and allocation_e2e_kill_test.go.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/internal/seed"
)

// TestE2EAllocation checks, against three processes: the bind and the
// conflict keys of created tasks against the test's own §2.1 over random
// catalogs and titles; the fixture's titles sent concurrently through all
// three nodes (one 201 per slot, every loser the spec's 409 body);
// windows; notes; supersede; and a leader SIGKILLed while windows are
// posted (each applied all-or-nothing, and exactly once). The killed node
// then restarts and the three state hashes must agree.
func TestE2EAllocation(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	began := time.Now()
	phase := func(name string, since time.Time) {
		t.Helper()
		t.Logf("%-34s %6v (t=%v)", name, time.Since(since).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	}
	cl := startE2ECluster(ctx, t)
	phase("cluster up", began)
	fx := e2eLoadFixture(t)
	rng := rand.New(rand.NewPCG(seed.For(t), 14))

	steps := []struct {
		name string
		run  func()
	}{
		{"random catalogs: bind and keys", func() { e2eAllocRandomCatalogs(ctx, t, cl, rng) }},
		{"bind thresholds, exactly", func() { e2eAllocBindEdges(ctx, t, cl) }},
		{"fixture titles, concurrent creates", func() { e2eAllocFixtureRace(ctx, t, cl, fx) }},
		{"windows", func() { e2eAllocWindows(ctx, t, cl, fx) }},
		{"notes", func() { e2eAllocNotes(ctx, t, cl, fx) }},
		{"supersede", func() { e2eAllocSupersede(ctx, t, cl, fx) }},
	}
	for _, s := range steps {
		p := time.Now()
		s.run()
		phase(s.name, p)
		if t.Failed() {
			t.FailNow()
		}
	}
	p := time.Now()
	killed := e2eAllocKillDuringWindows(ctx, t, cl)
	phase("SIGKILL leader during windows", p)
	if t.Failed() {
		t.FailNow()
	}
	p = time.Now()
	e2eRestartAndCatchUp(ctx, t, cl, killed)
	phase("restart and catch up", p)
	p = time.Now()
	e2eCompareStateHashes(ctx, t, cl)
	phase("state hashes", p)
}

// e2eFixture is allocation-fixture.json: the spec's v0 catalog and the
// titles of its section 6.
type e2eFixture struct {
	Space   string          `json:"space"`
	Catalog []e2eCatalogRow `json:"catalog"`
	Titles  []struct {
		Task  int    `json:"task"`
		Title string `json:"title"`
		Binds string `json:"binds"`
	} `json:"titles"`
	Negative483 []struct {
		Title string `json:"title"`
		Binds string `json:"binds"`
	} `json:"negative_483"`
}

func e2eLoadFixture(t *testing.T) e2eFixture {
	t.Helper()
	raw, err := os.ReadFile("../../allocation/testdata/allocation-fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	var f e2eFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// e2eSpecLoser is the loser's 409 body printed in spec section 4.
const e2eSpecLoser = `{
  "error": "allocation_conflict",
  "code": "conflict_key_occupied",
  "conflict_key": {
    "kind": "create_task",
    "target": "task:multi-agent-research:slot:T1",
    "delivery_mode": "result"
  },
  "outcome": "redirect",
  "winner": { "type": "task", "id": 91, "status": "open" },
  "write_occurred": false
}`

// e2eLoserBody is the spec's loser body for a create on target that the
// open task winner holds.
func e2eLoserBody(t *testing.T, target string, winner int) string {
	t.Helper()
	v := e2eParsed(t, []byte(e2eSpecLoser)).(map[string]any)
	v["conflict_key"].(map[string]any)["target"] = target
	v["winner"].(map[string]any)["id"] = winner
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// e2eReservedLoserBody is the spec's 409 of a loser to the reservation
// of proposal on target: in a window, a later proposal on a key an
// earlier one of the same window took.
func e2eReservedLoserBody(t *testing.T, target, proposal string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"error": "allocation_conflict", "code": "conflict_key_reserved",
		"conflict_key": map[string]any{"kind": "create_task", "target": target, "delivery_mode": "result"},
		"outcome":      "idle", "winner": map[string]any{"type": "reserved_intent", "id": proposal},
		"reserved_proposal_id": proposal, "retry_after_ms": 200, "write_occurred": false})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// e2eKey is a conflict key as the API shows it.
type e2eKey struct {
	Kind         string `json:"kind"`
	Target       string `json:"target"`
	DeliveryMode string `json:"delivery_mode"`
}

// e2eTask is a task as the API shows it (the fields the test reads).
type e2eTask struct {
	ID           int     `json:"id"`
	Space        string  `json:"space"`
	Title        string  `json:"title"`
	Status       string  `json:"status"`
	WorkItemID   *string `json:"work_item_id"`
	ConflictKey  e2eKey  `json:"conflict_key"`
	Version      int     `json:"version"`
	SupersededBy *int    `json:"superseded_by"`
	Reason       string  `json:"reason"`
}

// e2eWantTask checks a 201's task: open, version 1, on target in space,
// bound to workItem ("" for the title fallback).
func e2eWantTask(t *testing.T, what string, r e2eReply, space, title, target, workItem string) e2eTask {
	t.Helper()
	var res struct {
		Task e2eTask `json:"task"`
	}
	e2eDecodeReply(t, what, r, http.StatusCreated, &res)
	got := res.Task
	wi := ""
	if got.WorkItemID != nil {
		wi = *got.WorkItemID
	}
	if got.Space != space || got.Title != title || got.Status != "open" || got.Version != 1 || wi != workItem ||
		got.ConflictKey != (e2eKey{Kind: "create_task", Target: target, DeliveryMode: "result"}) {
		t.Errorf("%s: %v\nwant an open task of %s on %s bound to %q", what, r, space, target, workItem)
	}
	return got
}

// e2eListTasks reads every task of space (superseded included) through
// nodes, linearizably, page by page.
func e2eListTasks(ctx context.Context, t *testing.T, cl *e2eCluster, nodes []*e2eNode, space string) []e2eTask {
	t.Helper()
	var all []e2eTask
	after := ""
	for pages := 0; pages < 100; pages++ {
		q := url.Values{"include_superseded": {"true"}, "limit": {"128"}}
		if after != "" {
			q.Set("after", after)
		}
		var page struct {
			Tasks      []e2eTask `json:"tasks"`
			NextCursor string    `json:"next_cursor"`
		}
		r := cl.allocDo(ctx, nodes, http.MethodGet, "/v1/spaces/"+space+"/tasks?"+q.Encode(), nil, "")
		e2eDecodeReply(t, "list "+space, r, http.StatusOK, &page)
		all = append(all, page.Tasks...)
		if after = page.NextCursor; after == "" {
			return all
		}
	}
	t.Fatalf("more than 100 pages of tasks in %s", space)
	return nil
}

// e2ePutSpace puts space with catalog (nil: none).
func e2ePutSpace(ctx context.Context, t *testing.T, cl *e2eCluster, space string, catalog []e2eCatalogRow) {
	t.Helper()
	if catalog == nil {
		catalog = []e2eCatalogRow{}
	}
	r := cl.allocDo(ctx, cl.nodes, http.MethodPut, "/v1/spaces/"+space, map[string]any{"catalog": catalog}, "")
	e2eDecodeReply(t, fmt.Sprintf("put space %s", space), r, http.StatusOK, nil)
}
