package allocation_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/google/go-cmp/cmp"
)

// hundredths parses a two-decimal figure such as "0.58" into 58, without
// floating point.
func hundredths(t *testing.T, n string) int64 {
	t.Helper()
	whole, frac, ok := strings.Cut(n, ".")
	if !ok || len(frac) != 2 {
		t.Fatalf("figure %q: want two decimals", n)
	}
	v, err := strconv.ParseInt(whole+frac, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// roundsTo reports whether a/u rounded to two decimals is e/100, in
// integers: |100·a/u − e| ≤ 1/2, that is |200·a − 2·e·u| ≤ u.
func roundsTo(a, u int, e int64) bool {
	d := 200*int64(a) - 2*e*int64(u)
	if d < 0 {
		d = -d
	}
	return d <= int64(u)
}

// TestSection6Jaccard pins every Jaccard figure of spec section 6 (and
// the fixture's figure for task 92) against the v0 catalog, exactly, and
// the slot each title binds.
func TestSection6Jaccard(t *testing.T) {
	_, s, f := newFixtureService(t)
	ctx := context.Background()
	for _, title := range f.Titles {
		t.Run(fmt.Sprint(title.Task), func(t *testing.T) {
			res, err := s.Bind(ctx, f.Space, allocation.BindRequest{Title: title.Title}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Scores) != 2 {
				t.Fatalf("scores %+v: want one per catalog row", res.Scores)
			}
			for _, sc := range res.Scores {
				want := hundredths(t, string(title.Jaccard[sc.WorkItemID]))
				if !roundsTo(sc.Intersection, sc.Union, want) {
					t.Errorf("task %d vs %s: %d/%d does not round to 0.%02d", title.Task, sc.WorkItemID, sc.Intersection, sc.Union, want)
				}
			}
			if res.WorkItemID == nil || *res.WorkItemID != title.Binds {
				t.Fatalf("task %d binds %v, want %s", title.Task, res.WorkItemID, title.Binds)
			}
			if want := "task:" + f.Space + ":slot:" + title.Binds; res.Target != want {
				t.Fatalf("target %q, want %q", res.Target, want)
			}
		})
	}
}

// The exact fractions behind the figures, so that a change in
// tokenization that still rounds alike is caught too.
func TestSection6ExactFractions(t *testing.T) {
	_, s, f := newFixtureService(t)
	want := map[int]string{
		91: "T1 7/12 T3 3/18", 92: "T1 7/10 T3 1/18", 93: "T1 9/11 T3 1/21", 94: "T1 7/12 T3 2/19",
		95: "T1 2/21 T3 11/14", 96: "T1 1/19 T3 8/14", 97: "T1 1/17 T3 6/14",
	}
	for _, title := range f.Titles {
		res, err := s.Bind(context.Background(), f.Space, allocation.BindRequest{Title: title.Title}, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, sc := range res.Scores {
			got = append(got, fmt.Sprintf("%s %d/%d", sc.WorkItemID, sc.Intersection, sc.Union))
		}
		if g := strings.Join(got, " "); g != want[title.Task] {
			t.Errorf("task %d: %s, want %s", title.Task, g, want[title.Task])
		}
	}
}

// 483 negative: the T1 prefix is no slot vote; the Stopping title binds
// T3, and both creates proceed on distinct keys.
func TestSection6Negative483(t *testing.T) {
	_, s, f := newFixtureService(t)
	ctx := context.Background()
	for i, n := range f.Negative483 {
		res, err := s.Bind(ctx, f.Space, allocation.BindRequest{Title: n.Title}, 0)
		if err != nil || res.WorkItemID == nil || *res.WorkItemID != n.Binds {
			t.Fatalf("%q binds %+v (%v), want %s", n.Title, res, err, n.Binds)
		}
		got, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: n.Title, DeliveryMode: "result"})
		if err != nil || got.Task.ID != uint64(i+1) || got.Task.ConflictKey.Target != "task:"+f.Space+":slot:"+n.Binds {
			t.Fatalf("create %q: %+v %v", n.Title, got, err)
		}
	}
}

// windowOf builds one window of the fixture's titles (no work_item_id,
// delivery_mode result), proposal ids "p<task>".
func windowOf(f fixture, tasks ...int) []allocation.Proposal {
	var out []allocation.Proposal
	for _, title := range f.Titles {
		for _, want := range tasks {
			if title.Task == want {
				out = append(out, allocation.Proposal{ProposalID: fmt.Sprintf("p%d", title.Task), Title: title.Title, DeliveryMode: "result"})
			}
		}
	}
	return out
}

// summarize is a window's answer as "status target" per proposal.
func summarize(res *allocation.WindowResult) (created map[string]uint64, losers int, err error) {
	created = map[string]uint64{}
	for _, e := range res.Results {
		switch e.Status {
		case 201:
			if _, dup := created[e.Task.ConflictKey.Target]; dup {
				return nil, 0, fmt.Errorf("two creates on %s", e.Task.ConflictKey.Target)
			}
			created[e.Task.ConflictKey.Target] = e.Task.ID
		case 409:
			c := e.Conflict
			if c.Err != allocation.ErrAllocationConflict || c.Code != allocation.CodeKeyOccupied || c.WriteOccurred ||
				c.Outcome != allocation.OutcomeRedirect || c.Winner.Type != allocation.WinnerTask {
				return nil, 0, fmt.Errorf("loser body %+v", c)
			}
			id, ok := created[c.ConflictKey.Target]
			if !ok || c.Winner.ID.Num != id || c.Winner.Status != "open" {
				return nil, 0, fmt.Errorf("loser on %s names %+v, the window created %v", c.ConflictKey.Target, c.Winner, created)
			}
			losers++
		default:
			return nil, 0, fmt.Errorf("status %d: %+v", e.Status, e.Error)
		}
	}
	return created, losers, nil
}

// Empty-board first writer: four T1 titles in one window make one task
// and three losers; three T3 titles one; the seven together two, never
// four plus three.
func TestSection6EmptyBoardWindows(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tasks   []int
		created []string
		losers  int
	}{
		{"T1", []int{91, 92, 93, 94}, []string{"T1"}, 3},
		{"T3", []int{95, 96, 97}, []string{"T3"}, 2},
		{"T1+T3", []int{91, 92, 93, 94, 95, 96, 97}, []string{"T1", "T3"}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s, f := newFixtureService(t)
			res, err := s.Window(context.Background(), f.Space, allocation.WindowRequest{Proposals: windowOf(f, tc.tasks...)})
			if err != nil {
				t.Fatal(err)
			}
			created, losers, err := summarize(res)
			if err != nil {
				t.Fatal(err)
			}
			var slots []string
			for target := range created {
				slots = append(slots, strings.TrimPrefix(target, "task:"+f.Space+":slot:"))
			}
			if !cmp.Equal(slices.Sorted(slices.Values(slots)), tc.created) || losers != tc.losers || len(res.Results) != len(tc.tasks) {
				t.Fatalf("window created %v with %d losers; want %v and %d", created, losers, tc.created, tc.losers)
			}
			page, err := s.ListTasks(context.Background(), f.Space, allocation.ListRequest{}, 0)
			if err != nil || len(page.Tasks) != len(tc.created) {
				t.Fatalf("tasks after the window: %+v %v (one mutation per slot)", page, err)
			}
		})
	}
}

// Same-identity notes: the same principal, criterion and body twice on
// task 95 make one note and a 409; distinct criteria make two.
func TestSection6SameIdentityNotes(t *testing.T) {
	_, s, f := newFixtureService(t)
	ctx := context.Background()
	task, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: f.Titles[4].Title, DeliveryMode: "result"})
	if err != nil {
		t.Fatal(err)
	}
	id := task.Task.ID
	note := func(criterion int64, body string) (*allocation.NoteResult, error) {
		return s.PostNote(ctx, f.Space, id, allocation.NoteRequest{Kind: "post_review_note", CriterionIndex: &criterion, Body: body, DeliveryMode: "result"})
	}
	first, err := note(1, "Checkpoints are not covered.")
	if err != nil {
		t.Fatal(err)
	}
	// Whitespace differences normalize away: the same body.
	c := asConflict(t, "second note", func() error { _, err := note(1, "  Checkpoints are   not covered. "); return err }())
	if c.Code != allocation.CodeKeyOccupied || c.Winner.Type != allocation.WinnerNote || c.Winner.ID.Num != first.Note.ID ||
		c.ConflictKey.Kind != allocation.KindPostReviewNote || *c.ConflictKey != first.Note.ConflictKey || c.WriteOccurred {
		t.Fatalf("second note: %+v", c)
	}
	wantTarget := fmt.Sprintf("note:%s:task:%d:criterion:1:principal::body:%s", f.Space, id, allocation.NoteBodyHash("Checkpoints are not covered."))
	if first.Note.ConflictKey.Target != wantTarget {
		t.Fatalf("note target %q, want %q", first.Note.ConflictKey.Target, wantTarget)
	}
	if _, err := note(2, "Checkpoints are not covered."); err != nil {
		t.Fatalf("a distinct criterion: %v", err)
	}
	page, err := s.ListNotes(ctx, f.Space, id, "", 0, 0)
	if err != nil || len(page.Notes) != 2 {
		t.Fatalf("notes: %+v %v", page, err)
	}
}

// Aborted window: a reservation of T1 aborted before its mutation leaves
// no task and no occupancy; a later window creates.
func TestSection6AbortedWindow(t *testing.T) {
	_, s, f := newFixtureService(t)
	ctx := context.Background()
	r, err := s.Reserve(ctx, f.Space, allocation.ReserveRequest{ProposalID: "w1", Title: f.Titles[0].Title, DeliveryMode: "result"})
	if err != nil || r.Reservation.ConflictKey.Target != "task:"+f.Space+":slot:T1" {
		t.Fatalf("reserve: %+v %v", r, err)
	}
	// While it lives, a create on T1 loses to the reserved intent.
	c := asConflict(t, "create during the reservation", func() error {
		_, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: f.Titles[1].Title, DeliveryMode: "result"})
		return err
	}())
	if c.Code != allocation.CodeKeyReserved || c.Outcome != allocation.OutcomeIdle || c.Winner.Type != allocation.WinnerReservedIntent ||
		c.Winner.ID.Str != "w1" || c.ReservedProposalID != "w1" || c.RetryAfterMs != 200 || c.WriteOccurred {
		t.Fatalf("reserved loser: %+v", c)
	}
	if _, err := s.Abort(ctx, f.Space, "w1"); err != nil {
		t.Fatal(err)
	}
	if page, _ := s.ListTasks(ctx, f.Space, allocation.ListRequest{}, 0); len(page.Tasks) != 0 {
		t.Fatalf("an aborted window mutated: %+v", page.Tasks)
	}
	res, err := s.Window(ctx, f.Space, allocation.WindowRequest{Proposals: windowOf(f, 91, 92)})
	if err != nil {
		t.Fatal(err)
	}
	if created, losers, err := summarize(res); err != nil || len(created) != 1 || losers != 1 {
		t.Fatalf("the later window: %v %d %v", created, losers, err)
	}
}

// #11: a retry with the Idempotency-Key of a successful create returns
// the original 201 body, never 409; another request under the key is
// idempotency_conflict.
func TestSection6RetryNotConflict(t *testing.T) {
	_, s, f := newFixtureService(t)
	ctx := context.Background()
	req := allocation.CreateTaskRequest{Title: f.Titles[0].Title, DeliveryMode: "result", IdempotencyKey: "k-91"}
	first, err := s.CreateTask(ctx, f.Space, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, f.Space, first.Task.ID, allocation.TransitionRequest{Action: "claim"}); err != nil {
		t.Fatal(err)
	}
	again, err := s.CreateTask(ctx, f.Space, req)
	if err != nil || !again.Replayed || !cmp.Equal(again.Task, first.Task) {
		t.Fatalf("retry: %+v %v; want the original %+v", again, err, first.Task)
	}
	other := req
	other.Title = f.Titles[1].Title
	if _, err := s.CreateTask(ctx, f.Space, other); !errors.Is(err, errs.IdempotencyConflict) {
		t.Fatalf("another request under the key: %v", err)
	}
	// The same key as a window proposal replays too.
	res, err := s.Window(ctx, f.Space, allocation.WindowRequest{Proposals: []allocation.Proposal{{ProposalID: "x", Title: req.Title, DeliveryMode: "result", IdempotencyKey: "k-91"}}})
	if err != nil || res.Results[0].Status != 201 || !cmp.Equal(*res.Results[0].Task, first.Task) {
		t.Fatalf("window retry: %+v %v", res, err)
	}
}

// 422 only when no key can be formed; a true collision is 409.
func TestSection6InvalidVersusConflict(t *testing.T) {
	_, s, f := newFixtureService(t)
	ctx := context.Background()
	for _, req := range []allocation.CreateTaskRequest{
		{Title: "   \t ", DeliveryMode: "result"},
		{Title: "", DeliveryMode: "result"},
		{Title: "Survey", DeliveryMode: "pdf"},
		{Title: "Survey", DeliveryMode: "result", WorkItemID: ptr("X1")},
		{Title: "Survey", DeliveryMode: "result", WorkItemID: ptr("T")},
		{Title: "Survey", DeliveryMode: "result", WorkItemID: ptr(" T1")},
	} {
		if _, err := s.CreateTask(ctx, f.Space, req); !errors.Is(err, errs.Invalid) {
			t.Errorf("%+v: %v, want invalid (422)", req, err)
		}
	}
	// Stopwords only: a key by the title fallback, never a bind.
	got, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "The  Of", DeliveryMode: "result"})
	if err != nil || got.Task.WorkItemID != nil || got.Task.ConflictKey.Target != "task:"+f.Space+":the of" {
		t.Fatalf("stopword title: %+v %v", got, err)
	}
	if _, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: "x", DeliveryMode: "result", WorkItemID: ptr("t01")}); err != nil {
		t.Fatal(err)
	}
	c := asConflict(t, "collision", func() error {
		_, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: f.Titles[2].Title, DeliveryMode: "result"})
		return err
	}())
	want := allocation.Conflict{Err: "allocation_conflict", Code: "conflict_key_occupied",
		ConflictKey: &allocation.ConflictKey{Kind: "create_task", Target: "task:multi-agent-research:slot:T1", DeliveryMode: "result"},
		Outcome:     "redirect", Winner: &allocation.Winner{Type: "task", ID: allocation.NumID(2), Status: "open"}}
	if diff := cmp.Diff(want, *c); diff != "" {
		t.Fatalf("409 body (-want +got):\n%s", diff)
	}
}
