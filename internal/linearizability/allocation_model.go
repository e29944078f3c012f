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
)

func (k AllocKind) String() string {
	return [...]string{"?", "create", "withdraw", "reserve", "abort"}[min(int(k), 4)]
}

// AllocInput is one call on the key Key. Holder names the task or
// reservation a withdraw, reserve or abort acts on.
type AllocInput struct {
	Kind   AllocKind
	Key    string
	Holder string
}

// AllocOutput is a decided result: Won (the create or reserve took the
// key, Holder naming what now holds it: "task:N" or "res:P"; a withdraw
// or abort that applied), or lost to Holder.
type AllocOutput struct {
	Won    bool
	Holder string
}

// allocState is the key's live occupant: "" free, "task:N", "res:P", or
// unknownHolder once a create or reserve whose outcome is unknown took it.
type allocState string

const unknownHolder allocState = "?"

// stepAlloc is the sequential specification: at most one live occupant
// per key; a create or reserve wins exactly when the key is free, and a
// loser names the occupant; a withdraw or abort frees the key exactly
// when its task or reservation holds it (no phantom occupancy).
func stepAlloc(s allocState, in AllocInput, out AllocOutput, unknown bool) (bool, allocState) {
	switch in.Kind {
	case AllocCreate, AllocReserve:
		if unknown {
			if s == "" {
				return true, unknownHolder
			}
			return true, s
		}
		if out.Won {
			ok := s == "" && (in.Kind == AllocCreate && strings.HasPrefix(out.Holder, "task:") || in.Kind == AllocReserve && out.Holder == in.Holder)
			return ok, allocState(out.Holder)
		}
		switch s {
		case "":
			return false, s
		case unknownHolder:
			return out.Holder != "", allocState(out.Holder)
		}
		return out.Holder == string(s), s
	case AllocWithdraw, AllocAbort:
		holds := string(s) == in.Holder
		if unknown {
			if holds {
				return true, ""
			}
			return true, s
		}
		if out.Won != holds {
			return false, s
		}
		if holds {
			return true, ""
		}
		return true, s
	}
	return false, s
}

// AllocationModel is the porcupine model of creates, withdrawals,
// reservations and aborts on allocation conflict keys, partitioned by
// key. An UnknownOutput steps as if the write was applied.
func AllocationModel() porcupine.Model {
	part, partEvents := PartitionBy(func(in any) string { return in.(AllocInput).Key })
	return porcupine.Model{
		Partition:      part,
		PartitionEvent: partEvents,
		Init:           func() any { return allocState("") },
		Step: func(state, input, output any) (bool, any) {
			in := input.(AllocInput)
			if IsUnknown(output) {
				ok, next := stepAlloc(state.(allocState), in, AllocOutput{}, true)
				return ok, next
			}
			out, isAlloc := output.(AllocOutput)
			if !isAlloc {
				return false, state
			}
			ok, next := stepAlloc(state.(allocState), in, out, false)
			return ok, next
		},
		DescribeOperation: func(input, output any) string {
			in := input.(AllocInput)
			desc := fmt.Sprintf("%v(%s %s)", in.Kind, in.Key, in.Holder)
			if IsUnknown(output) {
				return desc + " -> ?"
			}
			o, _ := output.(AllocOutput)
			if o.Won {
				return desc + " -> won " + o.Holder
			}
			return desc + " -> lost to " + o.Holder
		},
		DescribeState: func(state any) string {
			if s := state.(allocState); s != "" {
				return string(s)
			}
			return "free"
		},
	}
}
