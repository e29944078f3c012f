package linearizability

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// WIKind names an operation on work items.
type WIKind uint8

// The work-item operations the model knows, each within one tenant (the
// model's partition: in-flight counts and caps are per tenant), in the
// tenant's default graph.
const (
	// WISubmit admits one item under an idempotency key, with an explicit
	// id, a priority, at most one dependency and an in-flight cap.
	WISubmit WIKind = iota + 1
	// WIClaim claims the best claimable item of the tenant.
	WIClaim
	// WIComplete completes an item succeeded with an attempt and fence.
	WIComplete
	// WICancel cancels an item.
	WICancel
	// WIList is a linearizable list of the tenant's first 128 items.
	WIList
)

func (k WIKind) String() string {
	switch k {
	case WISubmit:
		return "submit"
	case WIClaim:
		return "claim"
	case WIComplete:
		return "complete"
	case WICancel:
		return "cancel"
	case WIList:
		return "list"
	}
	return fmt.Sprintf("WIKind(%d)", uint8(k))
}

// Decisions, spelled as the workitem package and its errors report them.
// The model keeps its own copy: it is a specification, not a reuse of
// the code it checks.
const (
	WIOK                  = "ok"
	WIReplayed            = "replayed"
	WIExhausted           = "exhausted"
	WIDependencyMissing   = "dependency_missing"
	WIDependencyFailed    = "dependency_failed"
	WIConflict            = "conflict"
	WIIdempotencyConflict = "idempotency_conflict"
	WINotFound            = "not_found"
	WIStaleFence          = "stale_fence"
)

// WIInput is what a client sent. Every item of a history is admitted
// with an explicit id, and a dependency never has one of its own, so
// that every consequence of a command (a cascade to dependents) happens
// inside that command. Claim TTLs outlive the history: the model does not
// know FSM time.
type WIInput struct {
	Kind   WIKind
	Tenant string // the partition
	// Submit: the idempotency key and what the request under it holds;
	// two requests with one key and another Variant differ.
	Key      string
	Variant  int
	Priority int64
	Dep      string
	Cap      int64
	// ID is the item a submit names, or the one a complete or cancel
	// acts on; Attempt and Fence are what a complete presents.
	ID      string
	Attempt int64
	Fence   uint64
}

// WIOutput is a decided result.
//
//   - submit: ok or replayed with the item's Seq and the tenant's
//     InFlight as the admission reported them (a replay reports the first
//     admission's), or a refusal (exhausted, dependency_missing,
//     dependency_failed, conflict, idempotency_conflict);
//   - claim: ok with the ID, Attempt and Fence claimed, or not_found;
//   - complete: ok, stale_fence, conflict or stale_fence (the item
//     ended otherwise under the presented claim) or not_found;
//   - cancel: ok, conflict (ended otherwise) or not_found;
//   - list: List, the first 128 items (one page) as
//     "id:status:attempt:dependency-ready" in sequence order.
type WIOutput struct {
	Decision string
	Seq      uint64
	InFlight int64
	ID       string
	Attempt  int64
	Fence    uint64
	List     string
}

type wiItem struct {
	ID, Dep  string
	Priority int64
	Status   string
	Attempt  int64
	Fence    uint64 // the last claim's; 0 when its claim's outcome is unknown
	Ready    bool   // no dependency, or it succeeded
}

type wiKeyed struct {
	Key      string
	Variant  int
	Seq      uint64
	InFlight int64
}

// wiTenant is the model's state of one tenant. Step never changes a
// wiTenant it was given: it copies before writing.
type wiTenant struct {
	Items     []wiItem // index = sequence - 1
	Ledger    []wiKeyed
	LastFence uint64 // the largest fence a decided claim returned
}

func (s wiTenant) clone() wiTenant {
	return wiTenant{Items: slices.Clone(s.Items), Ledger: slices.Clone(s.Ledger), LastFence: s.LastFence}
}

func (s wiTenant) find(id string) int {
	for i, it := range s.Items {
		if it.ID == id {
			return i
		}
	}
	return -1
}

func (s wiTenant) inFlight() int64 {
	var n int64
	for _, it := range s.Items {
		if it.Status == "pending" || it.Status == "claimed" {
			n++
		}
	}
	return n
}

// end terminalizes item i and, for a failure or cancellation, cancels its
// pending dependents; for a success it makes them ready.
func (s *wiTenant) end(i int, status string) {
	s.Items[i].Status = status
	for k := range s.Items {
		d := &s.Items[k]
		if d.Dep != s.Items[i].ID || d.Status != "pending" {
			continue
		}
		if status == "succeeded" {
			d.Ready = true
		} else {
			d.Status = "cancelled"
		}
	}
}

// stepWI is the sequential specification: the state after in and the
// output a correct implementation returns. For a claim, the fence is the
// implementation's to choose (a log index): check accepts any fence above
// every earlier one and the model keeps it. ok is false for an input the
// model does not know.
func stepWI(s wiTenant, in WIInput, got WIOutput, unknown bool) (next wiTenant, legal bool) {
	next = s.clone()
	want := WIOutput{}
	switch in.Kind {
	case WISubmit:
		want = next.submit(in)
	case WIClaim:
		best := -1
		for i, it := range next.Items {
			if it.Status == "pending" && it.Ready && (best < 0 || it.Priority > next.Items[best].Priority) {
				best = i
			}
		}
		if best < 0 {
			want = WIOutput{Decision: WINotFound}
			break
		}
		it := &next.Items[best]
		it.Status, it.Attempt, it.Fence = "claimed", it.Attempt+1, 0
		want = WIOutput{Decision: WIOK, ID: it.ID, Attempt: it.Attempt}
		if !unknown {
			if got.Decision != WIOK || got.Fence <= next.LastFence {
				return s, false
			}
			it.Fence, next.LastFence, want.Fence = got.Fence, got.Fence, got.Fence
		}
	case WIComplete:
		i := next.find(in.ID)
		switch {
		case i < 0:
			want = WIOutput{Decision: WINotFound}
		case next.Items[i].Attempt != in.Attempt || next.Items[i].Fence != in.Fence || in.Fence == 0:
			want = WIOutput{Decision: WIStaleFence}
		case next.Items[i].Status == "succeeded":
			want = WIOutput{Decision: WIOK} // the same completion again
		case next.Items[i].Status == "failed" || next.Items[i].Status == "cancelled":
			// Ended otherwise under this claim: conflict from
			// workitem_complete version 2 on, stale_fence before (a
			// history says nothing of the version, and recorded ones
			// predate it).
			want = WIOutput{Decision: WIConflict}
			if got.Decision == WIStaleFence {
				want = got
			}
		case next.Items[i].Status != "claimed":
			want = WIOutput{Decision: WIStaleFence}
		default:
			next.end(i, "succeeded")
			want = WIOutput{Decision: WIOK}
		}
	case WICancel:
		i := next.find(in.ID)
		switch {
		case i < 0:
			want = WIOutput{Decision: WINotFound}
		case next.Items[i].Status == "cancelled":
			want = WIOutput{Decision: WIOK}
		case next.Items[i].Status != "pending" && next.Items[i].Status != "claimed":
			want = WIOutput{Decision: WIConflict}
		default:
			next.end(i, "cancelled")
			want = WIOutput{Decision: WIOK}
		}
	case WIList:
		want = WIOutput{List: next.list()}
	default:
		return s, false
	}
	return next, unknown || got == want
}

func (s *wiTenant) submit(in WIInput) WIOutput {
	for _, k := range s.Ledger {
		if k.Key == in.Key {
			if k.Variant != in.Variant {
				return WIOutput{Decision: WIIdempotencyConflict}
			}
			return WIOutput{Decision: WIReplayed, Seq: k.Seq, InFlight: k.InFlight}
		}
	}
	if s.find(in.ID) >= 0 {
		return WIOutput{Decision: WIConflict}
	}
	ready := true
	if in.Dep != "" {
		switch d := s.find(in.Dep); {
		case d < 0:
			return WIOutput{Decision: WIDependencyMissing}
		case s.Items[d].Status == "failed" || s.Items[d].Status == "cancelled":
			return WIOutput{Decision: WIDependencyFailed}
		default:
			ready = s.Items[d].Status == "succeeded"
		}
	}
	flying := s.inFlight()
	if flying+1 > in.Cap {
		return WIOutput{Decision: WIExhausted}
	}
	s.Items = append(s.Items, wiItem{ID: in.ID, Dep: in.Dep, Priority: in.Priority, Status: "pending", Ready: ready})
	out := WIOutput{Decision: WIOK, Seq: uint64(len(s.Items)), InFlight: flying + 1}
	s.Ledger = append(s.Ledger, wiKeyed{Key: in.Key, Variant: in.Variant, Seq: out.Seq, InFlight: out.InFlight})
	return out
}

// wiListPage is how many items a list shows: one page of the service.
const wiListPage = 128

func (s wiTenant) list() string {
	items := s.Items[:min(len(s.Items), wiListPage)]
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = fmt.Sprintf("%s:%s:%d:%t", it.ID, it.Status, it.Attempt, it.Ready)
	}
	return strings.Join(parts, ";")
}

// WorkItemModel is the porcupine model of work-item admission, claims,
// completions, cancellations and lists, partitioned by tenant. A decided
// output must be the specification's exactly (the sequence an admission
// takes and the in-flight count it reports, the item a claim takes and
// its attempt, every refusal), with one freedom: a claim's fence may be
// any number above every fence claimed before it in the tenant, which
// checks that fences strictly increase and are never handed out twice.
// An UnknownOutput is accepted and steps as if the call was applied.
func WorkItemModel() porcupine.Model {
	part, partEvents := PartitionBy(func(in any) string { return in.(WIInput).Tenant })
	return porcupine.Model{
		Partition:      part,
		PartitionEvent: partEvents,
		Init:           func() any { return wiTenant{} },
		Step: func(state, input, output any) (bool, any) {
			s := state.(wiTenant)
			got, isWI := output.(WIOutput)
			unknown := IsUnknown(output)
			if !isWI && !unknown {
				return false, s
			}
			next, ok := stepWI(s, input.(WIInput), got, unknown)
			return ok, next
		},
		Equal: func(a, b any) bool { return a.(wiTenant).equal(b.(wiTenant)) },
		Hash:  func(state any) uint64 { return state.(wiTenant).hash() },
		DescribeOperation: func(input, output any) string {
			return describeWIInput(input.(WIInput)) + " -> " + describeWIOutput(output)
		},
		DescribeState: func(state any) string { return describeWITenant(state.(wiTenant)) },
	}
}

func describeWIInput(in WIInput) string {
	switch in.Kind {
	case WISubmit:
		return fmt.Sprintf("submit(%s key %s/%d id %s prio %d dep %q cap %d)", in.Tenant, in.Key, in.Variant, in.ID, in.Priority, in.Dep, in.Cap)
	case WIComplete:
		return fmt.Sprintf("complete(%s %s attempt %d fence %d)", in.Tenant, in.ID, in.Attempt, in.Fence)
	case WICancel:
		return fmt.Sprintf("cancel(%s %s)", in.Tenant, in.ID)
	}
	return fmt.Sprintf("%v(%s)", in.Kind, in.Tenant)
}

func describeWIOutput(output any) string {
	if IsUnknown(output) {
		return "? (outcome unknown)"
	}
	o, ok := output.(WIOutput)
	switch {
	case !ok:
		return fmt.Sprintf("%#v", output)
	case o.List != "" || o.Decision == "":
		return "[" + o.List + "]"
	case o.Seq != 0:
		return fmt.Sprintf("%s seq %d in flight %d", o.Decision, o.Seq, o.InFlight)
	case o.ID != "":
		return fmt.Sprintf("%s %s attempt %d fence %d", o.Decision, o.ID, o.Attempt, o.Fence)
	}
	return o.Decision
}

// equal compares whole states, every field of every item. Porcupine's
// cache takes equal states for one: a comparison that misses a field (it
// once compared descriptions that showed one list page, 128 items) makes
// the checker refuse linearizable histories.
func (s wiTenant) equal(o wiTenant) bool {
	return s.LastFence == o.LastFence && slices.Equal(s.Items, o.Items) && slices.Equal(s.Ledger, o.Ledger)
}

// hash agrees with equal: it covers every field equal compares.
func (s wiTenant) hash() uint64 {
	h := fnv.New64a()
	var buf [8]byte
	word := func(n uint64) { binary.LittleEndian.PutUint64(buf[:], n); h.Write(buf[:]) }
	text := func(t string) { word(uint64(len(t))); h.Write([]byte(t)) }
	word(s.LastFence)
	word(uint64(len(s.Items)))
	for _, it := range s.Items {
		text(it.ID)
		text(it.Dep)
		text(it.Status)
		word(uint64(it.Priority))
		word(uint64(it.Attempt))
		word(it.Fence)
		if it.Ready {
			word(1)
		} else {
			word(0)
		}
	}
	for _, k := range s.Ledger {
		text(k.Key)
		word(uint64(k.Variant))
		word(k.Seq)
		word(uint64(k.InFlight))
	}
	return h.Sum64()
}

// describeWITenant spells the whole state for the visualization.
func describeWITenant(s wiTenant) string {
	var keys []string
	for _, k := range s.Ledger {
		keys = append(keys, fmt.Sprintf("%s/%d=%d,%d", k.Key, k.Variant, k.Seq, k.InFlight))
	}
	items := make([]string, len(s.Items))
	for i, it := range s.Items {
		items[i] = fmt.Sprintf("%s:%s:%d:%t:%d:%d:%s", it.ID, it.Status, it.Attempt, it.Ready, it.Fence, it.Priority, it.Dep)
	}
	return fmt.Sprintf("{items (id:status:attempt:ready:fence:priority:dependency) [%s] keys [%s] last fence %d}", strings.Join(items, ";"), strings.Join(keys, " "), s.LastFence)
}
