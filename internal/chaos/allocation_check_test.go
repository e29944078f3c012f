package chaos

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/allocation"
	"github.com/arbiterhq/arbiter/fsm"
)

// The feed replay of the allocation workload catches a key taken while
// held and an early expiry, and accepts a key taken after its
// reservation expired, aborted or its task was withdrawn.
func TestAllocationReplayOccupancy(t *testing.T) {
	targets := map[string]string{allocShortSpace + "/1": "k", allocShortSpace + "/2": "k", allocSpace + "/3": "k", allocSpace + "/4": "k"}
	reserved := map[string]string{allocShortSpace + "/p": "k", allocSpace + "/q": "k"}
	ev := func(index uint64, time int64, kind, key string) fsm.Event {
		return fsm.Event{Index: index, Time: time, Kind: kind, Key: key}
	}
	short, long := allocShortSpace+"/", allocSpace+"/"
	for _, tc := range []struct {
		name   string
		events []fsm.Event
		want   string // "" or a word of the problem
	}{
		{"expired, then taken", []fsm.Event{
			ev(1, 1000, "allocation_reserved", short+"p"),
			ev(2, 1000+allocShortWindowMs, "allocation_task_created", short+"1"),
			ev(3, 1400, "allocation_expired", short+"p")}, ""},
		{"taken while reserved", []fsm.Event{
			ev(1, 1000, "allocation_reserved", short+"p"),
			ev(2, 1000+allocShortWindowMs-1, "allocation_task_created", short+"1")}, "while res:p held it"},
		{"expired early", []fsm.Event{
			ev(1, 1000, "allocation_reserved", short+"p"),
			ev(2, 1100, "allocation_expired", short+"p")}, "expired before"},
		{"aborted, then taken", []fsm.Event{
			ev(1, 1000, "allocation_reserved", long+"q"),
			ev(2, 1001, "allocation_dropped", long+"q"),
			ev(3, 1002, "allocation_task_created", long+"3")}, ""},
		{"two live tasks", []fsm.Event{
			ev(1, 1000, "allocation_task_created", long+"3"),
			ev(2, 1001, "allocation_task_created", long+"4")}, "while task:3 held it"},
		{"withdrawn, then taken", []fsm.Event{
			ev(1, 1000, "allocation_task_created", short+"1"),
			ev(2, 1001, "allocation_task_withdraw", short+"1"),
			ev(3, 1002, "allocation_task_created", short+"2")}, ""},
		{"a task the state lacks", []fsm.Event{ev(1, 1000, "allocation_task_created", long+"9")}, "no such task"},
	} {
		problems := replayOccupancy(tc.events, targets, reserved)
		switch {
		case tc.want == "" && len(problems) > 0:
			t.Errorf("%s: %v", tc.name, problems)
		case tc.want != "" && (len(problems) == 0 || !strings.Contains(problems[0].Error(), tc.want)):
			t.Errorf("%s: %v, want a problem with %q", tc.name, problems, tc.want)
		}
	}
}

// A loser naming a reservation is a phantom once the client's replica
// showed FSM time at or past its expiry before the call.
func TestAllocationPhantomAfterExpiry(t *testing.T) {
	w := NewAllocation()
	w.expiry = map[string]int64{allocShortSpace + "/p": 2000}
	lost := &allocation.Conflict{Winner: &allocation.Winner{Type: allocation.WinnerReservedIntent, ID: allocation.StrID("p")}, ReservedProposalID: "p"}
	w.checkNotExpired(allocShortSpace, lost, 1999)
	if len(w.phantoms) != 0 {
		t.Fatalf("a loser before the expiry is a phantom: %v", w.phantoms)
	}
	w.checkNotExpired(allocShortSpace, lost, 2000)
	if len(w.phantoms) != 1 {
		t.Fatalf("a loser at the expiry is not reported: %v", w.phantoms)
	}
}
