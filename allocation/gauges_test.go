package allocation_test

import (
	"context"
	"testing"

	"github.com/arbiterhq/arbiter/allocation"
)

// Tasks are counted by status over the spaces, every status named (0 for
// none), and the spaces counted.
func TestTaskGauges(t *testing.T) {
	l, s, f := newFixtureService(t)
	ctx := context.Background()
	want := func(open, claimed float64) {
		t.Helper()
		g := map[string]float64{}
		for _, v := range l.FSM.Gauges() {
			g[v.Domain+" "+v.Name+"/"+v.Status] = v.Value
		}
		for _, st := range allocation.Statuses {
			if _, ok := g["allocation allocation_tasks/"+st]; !ok {
				t.Fatalf("no count of %s tasks: %v", st, g)
			}
		}
		if g["allocation allocation_tasks/open"] != open || g["allocation allocation_tasks/claimed"] != claimed || g["allocation allocation_spaces/"] != 1 {
			t.Fatalf("gauges %v; want %v open, %v claimed, 1 space", g, open, claimed)
		}
	}
	want(0, 0)
	first, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: f.Titles[0].Title, DeliveryMode: "result"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTask(ctx, f.Space, allocation.CreateTaskRequest{Title: f.Titles[4].Title, DeliveryMode: "result"}); err != nil {
		t.Fatal(err)
	}
	want(2, 0)
	if _, err := s.Transition(ctx, f.Space, first.Task.ID, allocation.TransitionRequest{Action: "claim"}); err != nil {
		t.Fatal(err)
	}
	want(1, 1)
}
