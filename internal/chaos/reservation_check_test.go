package chaos

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/workitem"
)

// The feed replay of the reservation workload catches every invariant
// broken on purpose, and accepts a history that keeps them.
func TestReservationReplay(t *testing.T) {
	index := uint64(0)
	ev := func(kind, key string, payload any) fsm.Event {
		index++
		b, _ := json.Marshal(payload)
		return fsm.Event{Index: index, Kind: kind, Key: key, Tenant: "t", Payload: b}
	}
	host := func(cpu int64) fsm.Event {
		return ev(workitem.EventHostPut, "h", workitem.HostEvent{HostID: "h", Capacity: workitem.Dimensions{CPUMillis: cpu, Processes: 10}})
	}
	claim := func(id string, fence uint64) fsm.Event {
		return ev(workitem.EventClaimed, id, workitem.OutboxEvent{WorkItemID: id, Attempt: 1, Fence: fence})
	}
	end := func(kind, id string) fsm.Event {
		return ev(kind, id, workitem.OutboxEvent{WorkItemID: id, Attempt: 1})
	}
	res := func(kind, rid, item string, fence uint64, cpu int64, mod func(*workitem.Keys)) fsm.Event {
		k := workitem.Keys{Repository: "r", Concurrency: "c", ConcurrencyLimit: 2}
		if mod != nil {
			mod(&k)
		}
		return ev(kind, rid, workitem.ReservationEvent{ReservationID: rid, WorkItemID: item, Attempt: 1, Fence: fence, HostID: "h",
			Dimensions: workitem.Dimensions{CPUMillis: cpu, Processes: 1}, Keys: k})
	}
	excl := func(k *workitem.Keys) { k.RepositoryExclusive = true }
	for _, tc := range []struct {
		name   string
		events func() []fsm.Event
		want   string // "" or a word of the first problem
	}{
		{"kept", func() []fsm.Event {
			return []fsm.Event{host(2000), claim("a", 5), res(workitem.EventReserved, "r1", "a", 5, 2000, nil),
				res(workitem.EventReservationEnded, "r1", "a", 5, 2000, nil), end(workitem.EventSucceeded, "a"),
				claim("b", 9), res(workitem.EventReserved, "r2", "b", 9, 2000, excl), res(workitem.EventReservationReleased, "r2", "b", 9, 2000, excl)}
		}, ""},
		{"over capacity", func() []fsm.Event {
			return []fsm.Event{host(2000), claim("a", 5), claim("b", 6), res(workitem.EventReserved, "r1", "a", 5, 1500, nil),
				res(workitem.EventReserved, "r2", "b", 6, 1000, nil)}
		}, "above its capacity"},
		{"exclusive beside shared", func() []fsm.Event {
			return []fsm.Event{host(9000), claim("a", 5), claim("b", 6), res(workitem.EventReserved, "r1", "a", 5, 1, nil),
				res(workitem.EventReserved, "r2", "b", 6, 1, excl)}
		}, "one of them exclusive"},
		{"concurrency above its limit", func() []fsm.Event {
			return []fsm.Event{host(9000), claim("a", 5), claim("b", 6), claim("c", 7), res(workitem.EventReserved, "r1", "a", 5, 1, nil),
				res(workitem.EventReserved, "r2", "b", 6, 1, nil), res(workitem.EventReserved, "r3", "c", 7, 1, nil)}
		}, "above its limit"},
		{"a stale holder reserves", func() []fsm.Event {
			return []fsm.Event{host(9000), claim("a", 5), res(workitem.EventReserved, "r1", "a", 4, 1, nil)}
		}, "stale holder"},
		{"a reservation outlives its claim", func() []fsm.Event {
			return []fsm.Event{host(9000), claim("a", 5), res(workitem.EventReserved, "r1", "a", 5, 1, nil), end(workitem.EventRequeued, "a")}
		}, "survives the end of its claim"},
		{"a stale holder releases", func() []fsm.Event {
			return []fsm.Event{host(9000), claim("a", 5), res(workitem.EventReserved, "r1", "a", 5, 1, nil), claim("a", 8),
				res(workitem.EventReservationReleased, "r1", "a", 5, 1, nil)}
		}, "earlier claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := replayReservations(tc.events())
			switch {
			case tc.want == "" && len(problems) > 0:
				t.Fatalf("problems in a history that keeps the invariants: %v", problems)
			case tc.want != "" && (len(problems) == 0 || !strings.Contains(problems[0].Error(), tc.want)):
				t.Fatalf("problems %v, want one saying %q", problems, tc.want)
			}
		})
	}
}
