package linearizability

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// NodeKind names an operation on the node primitives.
type NodeKind uint8

// The node operations the model knows.
const (
	// NodeCreate is CreateIfAbsent of a node with properties
	// {fence: Fence, owner: Owner}.
	NodeCreate NodeKind = iota + 1
	// NodeCAS is CompareAndSet with condition {fence: Expect} and updates
	// {fence: Fence, owner: Owner}.
	NodeCAS
	// NodeGet is a linearizable Get.
	NodeGet
)

func (k NodeKind) String() string {
	switch k {
	case NodeCreate:
		return "create"
	case NodeCAS:
		return "cas"
	case NodeGet:
		return "get"
	}
	return fmt.Sprintf("NodeKind(%d)", uint8(k))
}

// NodeInput is one call on the node primitives, restricted to the two
// properties the model follows: fence (a number) and owner (a string).
type NodeInput struct {
	Kind NodeKind
	ID   string
	// Owner is the owner a create stores or a CAS writes.
	Owner string
	// Fence is the fence a create stores or a CAS writes.
	Fence uint64
	// Expect is the fence a CAS requires (cas only).
	Expect uint64
}

// NodeOutput is a decided result. Owner, Fence and Version describe the
// node as the call returned it: after the call for create and cas (the
// first writer's node when a create did not create; the unchanged node
// when a CAS did not swap), as read for get. They are zero when NotFound.
type NodeOutput struct {
	Created bool // create: this call created the node
	Swapped bool // cas: the condition held and the updates were applied
	// NotFound: the node did not exist (get: not_found; cas: the
	// not_found error). Never set for create.
	NotFound bool
	Owner    string
	Fence    uint64
	Version  uint64
}

// nodeState is the model's state of one node id (the model is partitioned
// by id). It is comparable, so porcupine's default == is its equality.
type nodeState struct {
	Exists  bool
	Owner   string
	Fence   uint64
	Version uint64
}

// observed is the output that reports s as the stored node.
func (s nodeState) observed() NodeOutput {
	if !s.Exists {
		return NodeOutput{NotFound: true}
	}
	return NodeOutput{Owner: s.Owner, Fence: s.Fence, Version: s.Version}
}

// stepNode is the sequential specification: the state after in and the
// only output a correct implementation can return.
func stepNode(s nodeState, in NodeInput) (nodeState, NodeOutput, bool) {
	switch in.Kind {
	case NodeCreate:
		if s.Exists {
			return s, s.observed(), true
		}
		next := nodeState{Exists: true, Owner: in.Owner, Fence: in.Fence, Version: 1}
		out := next.observed()
		out.Created = true
		return next, out, true
	case NodeCAS:
		if !s.Exists || s.Fence != in.Expect {
			return s, s.observed(), true
		}
		next := nodeState{Exists: true, Owner: in.Owner, Fence: in.Fence, Version: s.Version + 1}
		out := next.observed()
		out.Swapped = true
		return next, out, true
	case NodeGet:
		return s, s.observed(), true
	}
	return s, NodeOutput{}, false
}

// NodesModel is the porcupine model of CreateIfAbsent, CompareAndSet on a
// fence and Get, partitioned by node id. A decided output must equal the
// specification's exactly (created/swapped, fence, owner and version); an
// UnknownOutput is accepted and steps as if the write was applied.
func NodesModel() porcupine.Model {
	part, partEvents := PartitionBy(func(in any) string { return in.(NodeInput).ID })
	return porcupine.Model{
		Partition:      part,
		PartitionEvent: partEvents,
		Init:           func() any { return nodeState{} },
		Step: func(state, input, output any) (bool, any) {
			s := state.(nodeState)
			next, want, ok := stepNode(s, input.(NodeInput))
			if !ok {
				return false, s
			}
			if IsUnknown(output) {
				return true, next
			}
			got, isNode := output.(NodeOutput)
			return isNode && got == want, next
		},
		DescribeOperation: func(input, output any) string {
			in := input.(NodeInput)
			return describeNodeInput(in) + " -> " + describeNodeOutput(in.Kind, output)
		},
		DescribeState: func(state any) string {
			s := state.(nodeState)
			if !s.Exists {
				return "absent"
			}
			return fmt.Sprintf("{fence %d, owner %s, v%d}", s.Fence, s.Owner, s.Version)
		},
	}
}

func describeNodeInput(in NodeInput) string {
	switch in.Kind {
	case NodeCreate:
		return fmt.Sprintf("create(%s, fence %d, owner %s)", in.ID, in.Fence, in.Owner)
	case NodeCAS:
		return fmt.Sprintf("cas(%s, fence %d -> %d, owner %s)", in.ID, in.Expect, in.Fence, in.Owner)
	case NodeGet:
		return fmt.Sprintf("get(%s)", in.ID)
	}
	return fmt.Sprintf("%v(%s)", in.Kind, in.ID)
}

func describeNodeOutput(kind NodeKind, output any) string {
	if IsUnknown(output) {
		return "? (outcome unknown)"
	}
	o, ok := output.(NodeOutput)
	if !ok {
		return fmt.Sprintf("%#v", output)
	}
	if o.NotFound {
		return "not found"
	}
	node := fmt.Sprintf("{fence %d, owner %s, v%d}", o.Fence, o.Owner, o.Version)
	switch {
	case kind == NodeCreate && o.Created:
		return "created " + node
	case kind == NodeCreate:
		return "exists " + node
	case kind == NodeCAS && o.Swapped:
		return "swapped " + node
	case kind == NodeCAS:
		return "not swapped " + node
	}
	return node
}
