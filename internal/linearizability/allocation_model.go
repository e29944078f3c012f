package linearizability

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
)

// AllocKind names an operation on one allocation conflict key.
type AllocKind uint8

// The allocation operations the model knows.
const (
	// AllocCreate creates a task on the key (no Idempotency-Key).
	AllocCreate AllocKind = iota + 1
	// AllocWithdraw withdraws task Holder ("task:N"), freeing the key if
	// it holds it.
	AllocWithdraw
	// AllocReserve reserves the key for proposal Holder ("res:P").
	AllocReserve
	// AllocAbort aborts reservation Holder ("res:P").
	AllocAbort
	// AllocWindow is the part of one allocation window that falls on the
	// key: Count create proposals, processed in the order of the window's
	// results. A window is one command, so each of its keys sees all of
	// its proposals at one point; the history records one operation per
	// key, all with the window's call and return times.
	AllocWindow
)

func (k AllocKind) String() string {
	return [...]string{"?", "create", "withdraw", "reserve", "abort", "window"}[min(int(k), 5)]
}

// AllocInput is one call on the key Key. Holder names the task or
// reservation a withdraw, reserve or abort acts on. Expiring says the
// key's space has a window short enough that a reservation may expire at
// any moment of the run: the model cannot tell when (expiry is FSM
// time), so it lets a reservation there vanish at any step; the client
// checks separately that no loser names a reservation its FSM time shows
// expired.
type AllocInput struct {
	Kind     AllocKind
	Key      string
	Holder   string
	Count    int // AllocWindow: the window's proposals on Key
	Expiring bool
}

// AllocOutput is a decided result: Won (the create or reserve took the
// key, Holder naming what now holds it: "task:N" or "res:P"; a withdraw
// or abort that applied), or lost to Holder.
type AllocOutput struct {
	Won    bool
	Holder string
}

// AllocWindowOutput is a window's answers on one key, in processing
// order: one per proposal, each a create's output.
type AllocWindowOutput struct {
	Results []AllocOutput
}

// allocState is the key's live occupant: Holder "" free, "task:N",
// "res:P", or unknownHolder once a create whose outcome is unknown took
// it; Expiring when the occupant is a reservation that may expire.
type allocState struct {
	Holder   string
	Expiring bool
}

const unknownHolder = "?"

// occupied is the state after holder took the key by in.
func occupied(holder string, in AllocInput) allocState {
	return allocState{Holder: holder, Expiring: in.Expiring && strings.HasPrefix(holder, "res:")}
}

// takeable reports whether a create or reserve may win against s: the
// key is free, or its reservation may have expired.
func (s allocState) takeable() bool { return s.Holder == "" || s.Expiring }

// stepTake is a create's or reserve's decided output against s: it wins
// exactly when the key is free (or its reservation expired), and a loser
// names the occupant.
func stepTake(s allocState, in AllocInput, out AllocOutput, kind AllocKind) (bool, allocState) {
	if out.Won {
		named := kind == AllocCreate && strings.HasPrefix(out.Holder, "task:") || kind == AllocReserve && out.Holder == in.Holder
		return s.takeable() && named, occupied(out.Holder, in)
	}
	switch s.Holder {
	case "":
		return false, s
	case unknownHolder:
		return out.Holder != "", occupied(out.Holder, in)
	}
	return out.Holder == s.Holder, s
}

// stepRelease is a withdraw's or abort's output against s: it applies
// exactly when its task or reservation holds the key (no phantom
// occupancy after it). A reservation that may have expired may be gone
// already, or still in the table after another took its key: either
// answer is right, and the key is its occupant's, or free.
func stepRelease(s allocState, in AllocInput, out AllocOutput, unknown bool) (bool, allocState) {
	holds := s.Holder == in.Holder
	next := s
	if holds {
		next = allocState{}
	}
	if unknown || in.Kind == AllocAbort && in.Expiring {
		return true, next
	}
	return out.Won == holds, next
}

// stepAlloc is the sequential specification: at most one live occupant
// per key; a create or reserve wins exactly when the key is free, and a
// loser names the occupant; a withdraw or abort frees the key exactly
// when its task or reservation holds it (no phantom occupancy). An
// unknown output steps as if the write was applied.
func stepAlloc(s allocState, in AllocInput, output any) (bool, allocState) {
	unknown := IsUnknown(output)
	switch in.Kind {
	case AllocCreate, AllocReserve:
		if unknown {
			switch {
			case !s.takeable():
				return true, s
			case in.Kind == AllocReserve: // applied, it holds in.Holder
				return true, occupied(in.Holder, in)
			}
			return true, allocState{Holder: unknownHolder}
		}
		out, ok := output.(AllocOutput)
		if !ok {
			return false, s
		}
		return stepTake(s, in, out, in.Kind)
	case AllocWindow:
		if unknown {
			if s.takeable() {
				return true, allocState{Holder: unknownHolder}
			}
			return true, s
		}
		out, ok := output.(AllocWindowOutput)
		if !ok || len(out.Results) != in.Count {
			return false, s
		}
		for _, r := range out.Results {
			var legal bool
			if legal, s = stepTake(s, in, r, AllocCreate); !legal {
				return false, s
			}
		}
		return true, s
	case AllocWithdraw, AllocAbort:
		out, _ := output.(AllocOutput)
		return stepRelease(s, in, out, unknown)
	}
	return false, s
}

// AllocationModel is the porcupine model of creates, windows,
// withdrawals, reservations and aborts on allocation conflict keys,
// partitioned by key.
func AllocationModel() porcupine.Model {
	part, partEvents := PartitionBy(func(in any) string { return in.(AllocInput).Key })
	return porcupine.Model{
		Partition:      part,
		PartitionEvent: partEvents,
		Init:           func() any { return allocState{} },
		Step: func(state, input, output any) (bool, any) {
			return stepAlloc(state.(allocState), input.(AllocInput), output)
		},
		DescribeOperation: func(input, output any) string {
			in := input.(AllocInput)
			desc := fmt.Sprintf("%v(%s %s)", in.Kind, in.Key, in.Holder)
			switch o := output.(type) {
			case UnknownOutput:
				return desc + " -> ?"
			case AllocWindowOutput:
				parts := make([]string, len(o.Results))
				for i, r := range o.Results {
					parts[i] = describeAlloc(r)
				}
				return desc + " -> [" + strings.Join(parts, ", ") + "]"
			case AllocOutput:
				return desc + " -> " + describeAlloc(o)
			}
			return desc + fmt.Sprintf(" -> %v", output)
		},
		DescribeState: func(state any) string {
			s := state.(allocState)
			switch {
			case s.Holder == "":
				return "free"
			case s.Expiring:
				return s.Holder + " (may expire)"
			}
			return s.Holder
		},
	}
}

func describeAlloc(o AllocOutput) string {
	if o.Won {
		return "won " + o.Holder
	}
	return "lost to " + o.Holder
}
