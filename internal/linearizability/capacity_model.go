package linearizability

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// CapKind names an operation on capacity leases.
type CapKind uint8

// The capacity operations the model knows. Each touches exactly one cell
// of one graph (one demand, one lease per batch), so the model is
// partitioned by (graph, cell): a cell id names a different cell in each
// graph of the tenant.
const (
	// CapAcquire is a single-demand AcquireCapacity of Amount on Cell for
	// Owner.
	CapAcquire CapKind = iota + 1
	// CapRenew is RenewCapacity of one lease of Cell, presented by Owner
	// with Fence and Epoch.
	CapRenew
	// CapRelease is ReleaseCapacity of one lease, presented likewise.
	CapRelease
	// CapStatus is a linearizable CapacityStatus of Cell.
	CapStatus
)

func (k CapKind) String() string {
	switch k {
	case CapAcquire:
		return "acquire"
	case CapRenew:
		return "renew"
	case CapRelease:
		return "release"
	case CapStatus:
		return "status"
	}
	return fmt.Sprintf("CapKind(%d)", uint8(k))
}

// Decisions, spelled as the capacity package reports them. The model keeps
// its own copy: it is a specification, not a reuse of the code it checks.
const (
	CapGranted    = "granted"
	CapExhausted  = "exhausted"
	CapStaleFence = "stale_fence"
	CapStaleEpoch = "stale_epoch"
	CapExpired    = "expired"
	CapInvalid    = "invalid"
)

// CapInput is what a client sent. Every cell has one resource class whose
// capacity is fixed for the whole history (CapacityModel's argument, by
// cell id: a cell of that id has it in every graph), and
// every lease TTL is long enough that nothing expires during it: the model
// does not know FSM time. Within a cell a lease is named by its fence
// token, which the FSM gives out uniquely per cell; the lease id a client
// sends stands for it.
type CapInput struct {
	Kind CapKind
	// Graph is the graph of Cell ("" the default one); the model is
	// partitioned by (Graph, Cell).
	Graph string
	Cell  string
	Owner string // acquire: the lease's owner; renew/release: the owner presented
	// Amount is what an acquire asks for (acquire only).
	Amount uint64
	// Fence and Epoch are the lease token presented (renew/release only).
	Fence uint64
	Epoch uint64
}

// CapOutput is a decided result.
//
//   - acquire: Decision granted (Fence is the new lease's fence token) or
//     exhausted; Used is the cell's usage the decision reports (after the
//     grant, or as found when exhausted);
//   - renew: Decision granted with Epoch the lease's new epoch, or a
//     denial (stale_fence, stale_epoch, expired, invalid);
//   - release: Decision granted or a denial;
//   - status: Used and LastFence of the cell (Decision empty).
type CapOutput struct {
	Decision  string
	Fence     uint64
	Epoch     uint64
	Used      uint64
	LastFence uint64
}

// capLease is one lease of the model; a cell's leases are indexed by
// fence-1, since the FSM hands fences out 1, 2, 3, ... per cell.
type capLease struct {
	Owner  string
	Amount uint64
	Epoch  uint64
	Active bool
}

// capCell is the model's state of one cell. Step never changes a capCell
// it was given: it copies the lease slice before writing.
type capCell struct {
	Used   uint64
	Leases []capLease
}

func (s capCell) lastFence() uint64 { return uint64(len(s.Leases)) }

func (s capCell) with(fence uint64, l capLease) capCell {
	next := capCell{Used: s.Used, Leases: append([]capLease(nil), s.Leases...)}
	if fence == 0 {
		next.Leases = append(next.Leases, l)
	} else {
		next.Leases[fence-1] = l
	}
	return next
}

// stepCap is the sequential specification: the state after in and the only
// output a correct implementation can return. ok is false for an input the
// model does not know (a cell without a capacity, an unknown kind).
func stepCap(capacity map[string]uint64, s capCell, in CapInput) (capCell, CapOutput, bool) {
	limit, known := capacity[in.Cell]
	if !known {
		return s, CapOutput{}, false
	}
	switch in.Kind {
	case CapAcquire:
		if in.Amount == 0 || s.Used+in.Amount > limit {
			return s, CapOutput{Decision: CapExhausted, Used: s.Used}, true
		}
		next := s.with(0, capLease{Owner: in.Owner, Amount: in.Amount, Epoch: 1, Active: true})
		next.Used += in.Amount
		return next, CapOutput{Decision: CapGranted, Fence: next.lastFence(), Used: next.Used}, true
	case CapRenew, CapRelease:
		if in.Fence == 0 || in.Fence > s.lastFence() {
			return s, CapOutput{Decision: CapInvalid}, true
		}
		l := s.Leases[in.Fence-1]
		switch {
		case l.Owner != in.Owner, !l.Active:
			return s, CapOutput{Decision: CapStaleFence}, true
		case l.Epoch != in.Epoch:
			return s, CapOutput{Decision: CapStaleEpoch}, true
		}
		if in.Kind == CapRenew {
			l.Epoch++
			return s.with(in.Fence, l), CapOutput{Decision: CapGranted, Epoch: l.Epoch}, true
		}
		l.Active = false
		next := s.with(in.Fence, l)
		next.Used -= l.Amount
		return next, CapOutput{Decision: CapGranted}, true
	case CapStatus:
		return s, CapOutput{Used: s.Used, LastFence: s.lastFence()}, true
	}
	return s, CapOutput{}, false
}

// CapacityModel is the porcupine model of single-cell acquire, renew,
// release and status, partitioned by (graph, cell); capacity gives each
// cell id's fixed capacity of its one resource class. A decided output must equal
// the specification's exactly (the fence a grant hands out, the usage it
// reports, the epoch a renew reaches); an UnknownOutput is accepted and
// steps as if the call was applied. Expiry is outside the model: histories
// must use a TTL that no call outlives.
func CapacityModel(capacity map[string]uint64) porcupine.Model {
	caps := make(map[string]uint64, len(capacity))
	for k, v := range capacity {
		caps[k] = v
	}
	part, partEvents := PartitionBy(func(in any) string {
		c := in.(CapInput)
		return c.Graph + "\x00" + c.Cell // neither holds a NUL
	})
	return porcupine.Model{
		Partition:      part,
		PartitionEvent: partEvents,
		Init:           func() any { return capCell{} },
		Step: func(state, input, output any) (bool, any) {
			s := state.(capCell)
			next, want, ok := stepCap(caps, s, input.(CapInput))
			if !ok {
				return false, s
			}
			if IsUnknown(output) {
				return true, next
			}
			got, isCap := output.(CapOutput)
			return isCap && got == want, next
		},
		Equal: func(a, b any) bool {
			x, y := a.(capCell), b.(capCell)
			if x.Used != y.Used || len(x.Leases) != len(y.Leases) {
				return false
			}
			for i := range x.Leases {
				if x.Leases[i] != y.Leases[i] {
					return false
				}
			}
			return true
		},
		Hash: func(state any) uint64 {
			s := state.(capCell)
			h := fnv.New64a()
			fmt.Fprintf(h, "%d|", s.Used)
			for _, l := range s.Leases {
				fmt.Fprintf(h, "%s,%d,%d,%t;", l.Owner, l.Amount, l.Epoch, l.Active)
			}
			return h.Sum64()
		},
		DescribeOperation: func(input, output any) string {
			return describeCapInput(input.(CapInput)) + " -> " + describeCapOutput(output)
		},
		DescribeState: func(state any) string { return describeCapCell(state.(capCell)) },
	}
}

func describeCapInput(in CapInput) string {
	cell := in.Cell
	if in.Graph != "" {
		cell = in.Graph + "/" + in.Cell
	}
	switch in.Kind {
	case CapAcquire:
		return fmt.Sprintf("acquire(%s, %d for %s)", cell, in.Amount, in.Owner)
	case CapRenew, CapRelease:
		return fmt.Sprintf("%v(%s, fence %d epoch %d by %s)", in.Kind, cell, in.Fence, in.Epoch, in.Owner)
	case CapStatus:
		return fmt.Sprintf("status(%s)", cell)
	}
	return fmt.Sprintf("%v(%s)", in.Kind, cell)
}

func describeCapOutput(output any) string {
	if IsUnknown(output) {
		return "? (outcome unknown)"
	}
	o, ok := output.(CapOutput)
	if !ok {
		return fmt.Sprintf("%#v", output)
	}
	switch {
	case o.Decision == "":
		return fmt.Sprintf("{used %d, last fence %d}", o.Used, o.LastFence)
	case o.Fence != 0:
		return fmt.Sprintf("%s fence %d, used %d", o.Decision, o.Fence, o.Used)
	case o.Epoch != 0:
		return fmt.Sprintf("%s epoch %d", o.Decision, o.Epoch)
	case o.Decision == CapExhausted:
		return fmt.Sprintf("%s, used %d", o.Decision, o.Used)
	}
	return o.Decision
}

func describeCapCell(s capCell) string {
	var active []string
	for i, l := range s.Leases {
		if l.Active {
			active = append(active, fmt.Sprintf("#%d %s %d e%d", i+1, l.Owner, l.Amount, l.Epoch))
		}
	}
	return fmt.Sprintf("{used %d, last fence %d, active [%s]}", s.Used, s.lastFence(), strings.Join(active, "; "))
}
