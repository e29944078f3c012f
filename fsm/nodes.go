package fsm

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/internal/canon"
	"github.com/arbiterhq/arbiter/log"
)

// Node primitive command and query types.
const (
	CmdNodeCreate     log.Type  = 10
	CmdNodeCAS        log.Type  = 11
	QueryNodeGet      QueryType = 10
	QueryNodesByLabel QueryType = 11
)

// Bounds of the node primitives.
const (
	MaxNodeIDBytes      = 512
	MaxLabels           = 64
	MaxPropertiesBytes  = 64 << 10 // canonical JSON of the whole property object
	MaxFieldsPerCAS     = 256      // conditions, and updates, per CAS
	MaxLabelPage        = 128
	maxCursorChars      = 1024
	nodeIdempotencyKind = "nodes"
)

// null is the canonical encoding of JSON null; as a condition it means
// "field absent", as an update it removes the field.
var null = []byte("null")

// Node is a graph node: a create-once identity with labels and properties.
// Properties hold canonical JSON; equal values have equal bytes.
type Node struct {
	NodeID        string                     `msgpack:"node_id" json:"node_id"`
	Labels        []string                   `msgpack:"labels" json:"labels"`
	Properties    map[string]json.RawMessage `msgpack:"properties" json:"properties"`
	Version       uint64                     `msgpack:"version" json:"version"`
	CreatedIndex  uint64                     `msgpack:"created_index" json:"created_index"`
	ModifiedIndex uint64                     `msgpack:"modified_index" json:"modified_index"`
}

// labelRow indexes a node under one of its labels.
type labelRow struct {
	Label  string `msgpack:"label"`
	NodeID string `msgpack:"node_id"`
}

// CreateNodeCommand is the payload of CmdNodeCreate.
type CreateNodeCommand struct {
	NodeID     string                     `msgpack:"node_id"`
	Labels     []string                   `msgpack:"labels"`
	Properties map[string]json.RawMessage `msgpack:"properties"`
	// SetNow sets each named field to FSM time plus the given offset in
	// milliseconds (see TimeFields).
	SetNow map[string]int64 `msgpack:"set_now,omitempty"`
}

// CASCommand is the payload of CmdNodeCAS. A condition whose value is null
// requires the field to be absent; an update whose value is null removes it.
type CASCommand struct {
	NodeID     string                     `msgpack:"node_id"`
	Conditions map[string]json.RawMessage `msgpack:"conditions"`
	Updates    map[string]json.RawMessage `msgpack:"updates"`
	TimeFields `msgpack:",inline"`
}

// CreateNodeResult says whether this call created the node, and the node as
// stored (the first writer's, when created is false).
type CreateNodeResult struct {
	Created  bool `msgpack:"created" json:"created"`
	Node     Node `msgpack:"node" json:"node"`
	Replayed bool `msgpack:"-" json:"replayed,omitempty"`
}

// CASResult says whether every condition held and the updates were applied,
// and the node as it is after this call.
type CASResult struct {
	Swapped  bool `msgpack:"swapped" json:"swapped"`
	Node     Node `msgpack:"node" json:"node"`
	Replayed bool `msgpack:"-" json:"replayed,omitempty"`
}

func validateNodeID(id string) error {
	if len(id) > MaxNodeIDBytes {
		return errs.Errorf(errs.CodeInvalid, "node_id is %d bytes, more than %d", len(id), MaxNodeIDBytes)
	}
	return bounds.Identifier("node_id", id)
}

// normalizeLabels validates labels and returns them sorted.
func normalizeLabels(labels []string) ([]string, error) {
	if len(labels) > MaxLabels {
		return nil, errs.Errorf(errs.CodeInvalid, "%d labels, more than %d", len(labels), MaxLabels)
	}
	out := append([]string{}, labels...)
	sort.Strings(out)
	for i, l := range out {
		if err := bounds.Identifier("label", l); err != nil {
			return nil, err
		}
		if i > 0 && out[i-1] == l {
			return nil, errs.Errorf(errs.CodeInvalid, "label %q given twice", l)
		}
	}
	return out, nil
}

// checkFields validates a field map from a command: identifier keys,
// canonical JSON values, and its canonical object within the size bound.
func checkFields(what string, fields map[string]json.RawMessage, maxFields int) error {
	if len(fields) > maxFields {
		return errs.Errorf(errs.CodeInvalid, "%s: %d fields, more than %d", what, len(fields), maxFields)
	}
	// In key order: the first bad field names the error, and the error is
	// part of the response, which must be the same on every replica.
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := fields[k]
		if err := bounds.Identifier(what+" field", k); err != nil {
			return err
		}
		if !canon.IsCanonical(v) {
			return errs.Errorf(errs.CodeInvalid, "%s field %q: value is not canonical JSON", what, k)
		}
	}
	if n := objectSize(fields); n > MaxPropertiesBytes {
		return errs.Errorf(errs.CodeInvalid, "%s: %d bytes encoded, more than %d", what, n, MaxPropertiesBytes)
	}
	return nil
}

// objectSize is the length of the canonical JSON object holding fields.
func objectSize(fields map[string]json.RawMessage) int {
	n := 2 // braces
	first := true
	for k, v := range fields {
		if !first {
			n++ // comma
		}
		first = false
		// The key as the canonical object spells it: json.Marshal would
		// escape <, > and & and overcount.
		q, _ := canon.Value(k)
		n += len(q) + 1 + len(v)
	}
	return n
}

// CanonicalFields turns caller-supplied JSON-compatible values into the
// canonical form a command carries. A nil Go value becomes JSON null.
func CanonicalFields(what string, in map[string]any) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(in))
	for k, v := range in {
		c, err := canon.Value(v)
		if err != nil {
			return nil, errs.Errorf(errs.CodeInvalid, "%s field %q: %v", what, k, err)
		}
		out[k] = c
	}
	return out, nil
}

// withoutNulls returns fields minus those whose value is null.
func withoutNulls(fields map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		if !bytes.Equal(v, null) {
			out[k] = v
		}
	}
	return out
}

// clone returns a deep copy, so stored nodes are never shared or mutated.
func (n *Node) clone() Node {
	c := *n
	c.Labels = append([]string{}, n.Labels...)
	c.Properties = make(map[string]json.RawMessage, len(n.Properties))
	for k, v := range n.Properties {
		c.Properties[k] = append(json.RawMessage{}, v...)
	}
	return c
}
