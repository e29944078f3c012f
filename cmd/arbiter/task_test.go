package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/arbiterhq/arbiter/client"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// The allocation commands with typed flags against a one-node cluster:
// a space put from --catalog/--alias, a task's whole lifecycle, notes,
// hold, supersede, bind, a window, and a key reservation committed,
// released and aborted. A create that loses exits 3 and prints the
// spec's flat body naming the winner.
func TestSpaceAndTaskCommands(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Nodes: 1})
	env := map[string]string{"ARBITER_ADDR": c.URL(0)}

	var put client.SpaceResult
	cliJSON(t, env, &put, "space", "put", "--space", "mar", "--catalog", "T1=Comparative survey of agents", "--catalog", "T2=Benchmark suite",
		"--alias", "T1=agent survey", "--delivery-modes", "result,review", "--window", "2s")
	sp := put.Space
	if len(sp.Catalog) != 2 || sp.Catalog[0].WorkItemID != "T1" || strings.Join(sp.Catalog[0].Aliases, "|") != "agent survey" ||
		strings.Join(sp.DeliveryModes, ",") != "result,review" || sp.WindowMs != 2000 {
		t.Fatalf("space put: %+v", sp)
	}
	var got client.SpaceResult
	cliJSON(t, env, &got, "space", "get", "--space", "mar")
	if got.Space.Version != sp.Version {
		t.Fatalf("space get: %+v", got)
	}
	var spaces client.SpacePage
	cliJSON(t, env, &spaces, "space", "list")
	if len(spaces.Spaces) != 1 {
		t.Fatalf("space list: %+v", spaces)
	}

	var created client.TaskResult
	cliJSON(t, env, &created, "task", "create", "--space", "mar", "--title", "Comparative survey of agents", "--delivery-mode", "result")
	first := created.Task
	if first.ID == 0 || first.WorkItemID == nil || *first.WorkItemID != "T1" {
		t.Fatalf("task create: %+v", first)
	}
	// Another create of the same key loses: exit 3, the flat body.
	lost := runCLI(t, env, "", "task", "create", "--space", "mar", "--title", "agent survey", "--delivery-mode", "result")
	if lost.status != exitNotTaken || !strings.Contains(lost.stdout, `"error": "allocation_conflict"`) ||
		!regexp.MustCompile(`"id": 1\b`).MatchString(lost.stdout) {
		t.Fatalf("a create that loses: status %d\nstdout %s\nstderr %s", lost.status, lost.stdout, lost.stderr)
	}
	var one client.TaskResult
	cliJSON(t, env, &one, "task", "get", "--space", "mar", "--id", "1")
	var open client.TaskPage
	cliJSON(t, env, &open, "task", "list", "--space", "mar", "--status", "open", "--limit", "5")
	if one.Task.Title != first.Title || len(open.Tasks) != 1 {
		t.Fatalf("task get %+v, list %+v", one, open)
	}
	var claimed client.TaskResult
	cliJSON(t, env, &claimed, "task", "transition", "--space", "mar", "--id", "1", "--action", "claim", "--expected-version", "1")
	if claimed.Task.Status != "claimed" {
		t.Fatalf("transition claim: %+v", claimed.Task)
	}
	if r := runCLI(t, env, "", "task", "transition", "--space", "mar", "--id", "1", "--action", "submit", "--expected-version", "1"); r.status != exitNotTaken {
		t.Fatalf("a transition from another version: status %d, %s", r.status, r.stderr)
	}
	var note client.NoteResult
	cliJSON(t, env, &note, "task", "note", "--space", "mar", "--id", "1", "--criterion", "0", "--body", "looks right", "--delivery-mode", "result")
	var notes client.NotePage
	cliJSON(t, env, &notes, "task", "notes", "--space", "mar", "--id", "1")
	if note.Note.CriterionIndex == nil || *note.Note.CriterionIndex != 0 || len(notes.Notes) != 1 {
		t.Fatalf("note %+v, notes %+v", note, notes)
	}
	var held, lifted client.TaskResult
	cliJSON(t, env, &held, "task", "hold", "--space", "mar", "--id", "1")
	cliJSON(t, env, &lifted, "task", "hold", "--space", "mar", "--id", "1", "--lift")
	if !held.Task.StewardHold || lifted.Task.StewardHold {
		t.Fatalf("hold %v, lift %v", held.Task.StewardHold, lifted.Task.StewardHold)
	}
	// A whole body with --json (standard input), then superseded.
	r := runCLI(t, env, `{"title": "A duplicate survey", "delivery_mode": "review"}`, "task", "create", "--space", "mar", "--filename", "-", "--idempotency-key", "dup-1")
	if r.status != 0 {
		t.Fatalf("task create --json -: %+v", r)
	}
	var sup client.TaskResult
	cliJSON(t, env, &sup, "task", "supersede", "--space", "mar", "--id", "2", "--surviving-task", "1", "--reason", "duplicate")
	if sup.Task.Status != "superseded" || sup.Task.SupersededBy == nil || *sup.Task.SupersededBy != 1 {
		t.Fatalf("supersede: %+v", sup.Task)
	}
	var bound client.BindResult
	cliJSON(t, env, &bound, "task", "bind", "--space", "mar", "--title", "benchmark suite")
	if bound.WorkItemID == nil || *bound.WorkItemID != "T2" {
		t.Fatalf("bind: %+v", bound)
	}

	// A window: the second proposal on the same key loses to the first.
	var win client.WindowResult
	cliJSON(t, env, &win, "space", "window", "--space", "mar",
		"--proposal", "proposal_id=p1,title=Fresh topic,delivery_mode=result,received_seq=1",
		"--proposal", `proposal_id=p2,"title=Fresh topic",delivery_mode=result,received_seq=2`)
	if len(win.Results) != 2 || win.Results[0].Status != 201 || win.Results[1].Status != 409 {
		t.Fatalf("window: %+v", win)
	}

	// A key reservation: reserve, commit, release; another aborted.
	var res client.AllocationReservationResult
	cliJSON(t, env, &res, "space", "reserve", "--space", "mar", "--title", "Outside work", "--delivery-mode", "result", "--proposal-id", "p9")
	var resPage client.AllocationReservationPage
	cliJSON(t, env, &resPage, "space", "reservations", "--space", "mar")
	if res.Reservation.ProposalID != "p9" || len(resPage.Reservations) != 1 {
		t.Fatalf("reserve %+v, reservations %+v", res, resPage)
	}
	var occ client.Occupancy
	cliJSON(t, env, &occ, "space", "commit", "--space", "mar", "--proposal-id", "p9", "--winner-type", "pull_request", "--winner-id", "91")
	if occ.Winner.Type != "pull_request" || occ.Winner.ID.Num != 91 {
		t.Fatalf("commit: %+v", occ)
	}
	var drop client.DropResult
	cliJSON(t, env, &drop, "space", "release", "--space", "mar", "--proposal-id", "p9")
	if !drop.Dropped {
		t.Fatalf("release: %+v", drop)
	}
	var res2 client.AllocationReservationResult
	cliJSON(t, env, &res2, "space", "reserve", "--space", "mar", "--title", "Other outside work", "--delivery-mode", "result")
	if res2.Reservation.ProposalID == "" {
		t.Fatalf("reserve with a made proposal id: %+v", res2)
	}
	cliJSON(t, env, &drop, "space", "abort", "--space", "mar", "--proposal-id", res2.Reservation.ProposalID)
	if !drop.Dropped {
		t.Fatalf("abort: %+v", drop)
	}
	var occPage client.OccupancyPage
	cliJSON(t, env, &occPage, "space", "occupancy", "--space", "mar")
	var dups client.DuplicatePage
	cliJSON(t, env, &dups, "space", "duplicates", "--space", "mar")
	if len(occPage.Occupancy) == 0 {
		t.Fatalf("occupancy: %+v", occPage)
	}

	// -o table is flat: one row per record, no JSON in any cell.
	for _, args := range [][]string{
		{"task", "list", "--space", "mar", "--include-superseded"},
		{"task", "get", "--space", "mar", "--id", "2"},
		{"space", "get", "--space", "mar"},
		{"space", "occupancy", "--space", "mar"},
		{"task", "notes", "--space", "mar", "--id", "1"},
		{"space", "window", "--space", "mar", "--proposal", "proposal_id=p3,title=Fresh topic,delivery_mode=result"},
	} {
		r := runCLI(t, env, "", append(args, "-o", "table")...)
		if r.status != 0 && r.status != exitNotTaken {
			t.Fatalf("arbiter %s -o table: %+v", strings.Join(args, " "), r)
		}
		if strings.ContainsAny(r.stdout, "{}") || r.stdout == "" {
			t.Errorf("arbiter %s -o table prints JSON in a cell:\n%s", strings.Join(args, " "), r.stdout)
		}
	}
	r = runCLI(t, env, "", "task", "list", "--space", "mar", "--include-superseded", "-o", "table")
	rows, _, _ := strings.Cut(r.stdout, "\n\n") // then NEXT_CURSOR
	lines := strings.Split(strings.TrimSpace(rows), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "CONFLICT_KEY.TARGET") {
		t.Errorf("task list -o table: want a header and a row per task (3), dotted columns:\n%s", r.stdout)
	}
}

// Command-line mistakes exit 2 with one line and a pointer to --help,
// before anything is sent; --help lists only the command's own flags
// and the connection flags.
func TestSpaceAndTaskUsage(t *testing.T) {
	env := map[string]string{"ARBITER_ADDR": "http://" + deadAddr(t)}
	for _, args := range [][]string{
		{"task", "create", "--space", "s", "--title", "x", "--delivery-mode", "result", "--bogus"},
		{"task", "create", "--title", "x", "--delivery-mode", "result"}, // no --space
		{"task", "create", "--space", "s", "--filename", `{"title":"x","delivery_mode":"r"}`, "--title", "y"},
		{"task", "create", "--space", "s", "--filename", `{"title":"x","color":"r"}`},
		{"task", "transition", "--space", "s", "--id", "one", "--action", "claim"},
		{"task", "get", "--space", "s"}, // no --id
		{"space", "put", "--space", "s", "--catalog", "no-title"},
		{"space", "window", "--space", "s", "--proposal", "proposal_id=p1,title=x"},
		{"space", "get", "--space", "s", "--title", "x"}, // a flag of task create
		{"space", "get", "--space", "s", "-o", "yaml"},
	} {
		r := runCLI(t, env, "", args...)
		if r.status != exitUsage || strings.Count(strings.TrimSpace(r.stderr), "\n") != 1 || !strings.Contains(r.stderr, "--help'") {
			t.Errorf("arbiter %s: status %d, stderr %q; want %d, one line and see '... --help'", strings.Join(args, " "), r.status, r.stderr, exitUsage)
		}
	}
	r := runCLI(t, nil, "", "space", "get", "--help")
	if r.status != 0 || !strings.Contains(r.stdout, "--space ") || !strings.Contains(r.stdout, "--addr ") {
		t.Fatalf("space get --help: %+v", r)
	}
	for _, other := range []string{"--id ", "--title ", "--status ", "--json ", "--idempotency-key "} {
		if strings.Contains(r.stdout, other) {
			t.Errorf("space get --help lists %s, a flag of another command:\n%s", other, r.stdout)
		}
	}
}

// A write whose answer is lost (the node drops the connection after
// reading the request) has an unknown outcome: the command exits 1 and,
// having made the idempotency key itself, prints it to retry with.
func TestGeneratedKeyPrintedOnUnknownOutcome(t *testing.T) {
	var mu sync.Mutex
	var keys []string // the keys the node was sent
	sent := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(keys)
	}
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(drop.Close)
	env := map[string]string{"ARBITER_ADDR": drop.URL}
	r := runCLI(t, env, "", "task", "create", "--space", "s", "--title", "x", "--delivery-mode", "result")
	m := regexp.MustCompile(`(?m)^retry with: --idempotency-key (\S+)$`).FindStringSubmatch(r.stderr)
	if k := sent(); r.status != exitError || m == nil || len(k) != 1 || k[0] != m[1] {
		t.Fatalf("an unknown outcome: status %d, keys sent %q, stderr %q", r.status, k, r.stderr)
	}
	// And the exact command that retries with it.
	if want := "  arbiter task create --space s --title x --delivery-mode result --idempotency-key " + m[1] + "\n"; !strings.Contains(r.stderr, want) {
		t.Fatalf("the retry command is not printed as %q: %q", want, r.stderr)
	}
	// A key given is the caller's: nothing more is printed.
	r = runCLI(t, env, "", "task", "create", "--space", "s", "--title", "x", "--delivery-mode", "result", "--idempotency-key", "mine")
	if r.status != exitError || strings.Contains(r.stderr, "retry with:") || !strings.Contains(r.stderr, "mine") {
		t.Fatalf("an unknown outcome with a key given: status %d, stderr %q", r.status, r.stderr)
	}
	// concept reserve's key is its --request.
	r = runCLI(t, env, "", "concept", "reserve", "--concept-id", "RMDD-1", "--tenant", "t", "--purpose-text", "p")
	if r.status != exitError || !regexp.MustCompile(`(?m)^retry with: --request go-[0-9a-f]+$`).MatchString(r.stderr) {
		t.Fatalf("concept reserve, an unknown outcome: status %d, stderr %q", r.status, r.stderr)
	}
}
