package nodes

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"sort"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/internal/canon"
	"github.com/arbiterhq/arbiter/log"
)

// Node primitive command and query types, inside the range 10-99 the
// module declares (Module: fsm.Module.Types).
const (
	CmdCreate    log.Type      = 10
	CmdCAS       log.Type      = 11
	QueryGet     fsm.QueryType = 10
	QueryByLabel fsm.QueryType = 11
	// QueryIndexFields answers whether the replica's enabled set has
	// version 2 of node_create and node_cas (IndexFields): a caller asks
	// before every fenced write, so it is a query of its own, far cheaper
	// than the whole capabilities view.
	QueryIndexFields fsm.QueryType = 12
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

// Record is a node as the primitives store it: a create-once identity
// with labels and properties. (It is named Record, not Node, so that it
// does not meet cluster.Node, a member of the cluster, in one line.)
// Properties hold canonical JSON; equal values have equal bytes.
type Record struct {
	NodeID        string                     `msgpack:"node_id" json:"node_id"`
	Labels        []string                   `msgpack:"labels" json:"labels"`
	Properties    map[string]json.RawMessage `msgpack:"properties" json:"properties"`
	Version       uint64                     `msgpack:"version" json:"version"`
	CreatedIndex  uint64                     `msgpack:"created_index" json:"created_index"`
	ModifiedIndex uint64                     `msgpack:"modified_index" json:"modified_index"`
}

// MarshalJSON writes the node with every integer property in full digits
// (see canon.PlainIntegers): the stored canonical form writes integers of
// more than 21 digits in exponent form, exact but not what a reader of an
// answer expects. Both forms canonicalize to the same value, so either
// may be sent back in a condition.
//
// It writes what encoding/json would write of the node's fields (see
// AppendJSON), without reflection.
func (n Record) MarshalJSON() ([]byte, error) {
	return n.AppendJSON(nil), nil
}

// labelRow indexes a node under one of its labels.
type labelRow struct {
	Label  string `msgpack:"label"`
	NodeID string `msgpack:"node_id"`
}

// CreateCommand is the payload of CmdCreate.
type CreateCommand struct {
	NodeID     string                     `msgpack:"node_id"`
	Labels     []string                   `msgpack:"labels"`
	Properties map[string]json.RawMessage `msgpack:"properties"`
	// SetNow sets each named field to FSM time plus the given offset in
	// milliseconds (see TimeFields).
	SetNow map[string]int64 `msgpack:"set_now,omitempty"`
	// IndexFields set fields to the entry's log index (version 2).
	IndexFields `msgpack:",inline"`
}

// CASCommand is the payload of CmdCAS. A condition whose value is null
// requires the field to be absent; an update whose value is null removes it.
type CASCommand struct {
	NodeID      string                     `msgpack:"node_id"`
	Conditions  map[string]json.RawMessage `msgpack:"conditions"`
	Updates     map[string]json.RawMessage `msgpack:"updates"`
	TimeFields  `msgpack:",inline"`
	IndexFields `msgpack:",inline"`
	LabelEdits  `msgpack:",inline"`
}

// LabelEdits change a node's labels in a CAS, applied with its updates.
// A label may not be both added and removed.
type LabelEdits struct {
	AddLabels    []string `msgpack:"add_labels,omitempty" json:"add_labels,omitempty"`
	RemoveLabels []string `msgpack:"remove_labels,omitempty" json:"remove_labels,omitempty"`
}

func (e *LabelEdits) check() error {
	if len(e.AddLabels)+len(e.RemoveLabels) > MaxLabels {
		return errs.Errorf(errs.CodeInvalid, "more than %d label edits", MaxLabels)
	}
	add, err := normalizeLabels(e.AddLabels)
	if err != nil {
		return err
	}
	remove, err := normalizeLabels(e.RemoveLabels)
	if err != nil {
		return err
	}
	for _, l := range add {
		if _, both := slices.BinarySearch(remove, l); both {
			return errs.Errorf(errs.CodeInvalid, "label %q is both added and removed", l)
		}
	}
	return nil
}

// apply returns labels after the edits, sorted, and which rows to add and
// remove in the label index.
func (e *LabelEdits) apply(labels []string) (next, added, removed []string, err error) {
	have := map[string]bool{}
	for _, l := range labels {
		have[l] = true
	}
	for _, l := range e.RemoveLabels {
		if have[l] {
			delete(have, l)
			removed = append(removed, l)
		}
	}
	for _, l := range e.AddLabels {
		if !have[l] {
			have[l] = true
			added = append(added, l)
		}
	}
	if len(have) > MaxLabels {
		return nil, nil, nil, errs.Errorf(errs.CodeInvalid, "a node may carry at most %d labels", MaxLabels)
	}
	for l := range have {
		next = append(next, l)
	}
	slices.Sort(next)
	slices.Sort(added)
	slices.Sort(removed)
	if next == nil {
		next = []string{}
	}
	return next, added, removed, nil
}

// CreateResult says whether this call created the node, and the node as
// stored (the first writer's, when created is false).
type CreateResult struct {
	Created  bool   `msgpack:"created" json:"created"`
	Node     Record `msgpack:"node" json:"node"`
	Replayed bool   `msgpack:"-" json:"replayed,omitempty"`
	// TimeMs is FSM time when the result was decided (unix ms).
	TimeMs int64 `msgpack:"-" json:"-"`
}

// CASResult says whether every condition held and the updates were applied,
// and the node as it is after this call.
type CASResult struct {
	Swapped bool   `msgpack:"swapped" json:"swapped"`
	Node    Record `msgpack:"node" json:"node"`
	// Failed names, when Swapped is false, every check that did not hold
	// when the CAS was decided (see Failure). The client derives it from
	// the decided node and time: it is not part of what Apply returns.
	Failed   []Failure `msgpack:"-" json:"failed,omitempty"`
	Replayed bool      `msgpack:"-" json:"replayed,omitempty"`
	// TimeMs is FSM time when the result was decided (unix ms).
	TimeMs int64 `msgpack:"-" json:"-"`
}

func validateNodeID(id string) error {
	if len(id) > MaxNodeIDBytes {
		return errs.Errorf(errs.CodeInvalid, "node_id is %d bytes, more than %d", len(id), MaxNodeIDBytes)
	}
	return bounds.Identifier("node_id", id)
}

// normalizeLabels validates labels and returns them sorted, in a new
// slice.
func normalizeLabels(labels []string) ([]string, error) {
	return sortLabels(slices.Clone(labels))
}

// sortLabels is normalizeLabels sorting labels in place: for a command's
// own decoded labels, which nothing else holds. Never nil.
func sortLabels(out []string) ([]string, error) {
	if len(out) > MaxLabels {
		return nil, errs.Errorf(errs.CodeInvalid, "%d labels, more than %d", len(out), MaxLabels)
	}
	if out == nil {
		out = []string{}
	}
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
	if err := firstBadField(what, fields); err != nil {
		return err
	}
	if n := objectSize(fields); n > MaxPropertiesBytes {
		return errs.Errorf(errs.CodeInvalid, "%s: %d bytes encoded, more than %d", what, n, MaxPropertiesBytes)
	}
	return nil
}

// firstBadField is the error of the first bad field in key order, or nil.
// The error is part of the response, which must be the same on every
// replica, so only a map with a bad field is sorted to find the first:
// a valid one (nearly every one) is checked in any order, without sorting.
func firstBadField(what string, fields map[string]json.RawMessage) error {
	valid := true
	for k, v := range fields { // order-free: only whether any field is bad
		if !bounds.IsIdentifier(k) || !canon.IsCanonical(v) {
			valid = false
			break
		}
	}
	if valid {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if err := checkField(what, k, fields[k]); err != nil {
			return err
		}
	}
	return nil
}

// checkField is the error of field k with value v, or nil.
func checkField(what, k string, v json.RawMessage) error {
	if bounds.IsIdentifier(k) && canon.IsCanonical(v) {
		return nil // without making the error's words, which allocates
	}
	if err := bounds.Identifier(what+" field", k); err != nil {
		return err
	}
	if !canon.IsCanonical(v) {
		return errs.Errorf(errs.CodeInvalid, "%s field %q: value is not canonical JSON", what, k)
	}
	return nil
}

// check is checkFields for fields sorted by name, with the same errors:
// their first bad field is the first in key order already.
func (f fields) check(what string, maxFields int) error {
	if len(f) > maxFields {
		return errs.Errorf(errs.CodeInvalid, "%s: %d fields, more than %d", what, len(f), maxFields)
	}
	for _, kv := range f {
		if err := checkField(what, kv.Key, kv.Value); err != nil {
			return err
		}
	}
	if n := f.objectSize(); n > MaxPropertiesBytes {
		return errs.Errorf(errs.CodeInvalid, "%s: %d bytes encoded, more than %d", what, n, MaxPropertiesBytes)
	}
	return nil
}

// objectSize is the length of the canonical JSON object holding fields.
func objectSize(fields map[string]json.RawMessage) int {
	// The braces, then each field.
	n := 2
	for k, v := range fields { // order-free: a sum
		n += fieldSize(k, v)
	}
	return n - min(len(fields), 1) // a comma after every field but the last
}

// objectSize is the length of the canonical JSON object holding f.
func (f fields) objectSize() int {
	n := 2 // braces
	for _, kv := range f {
		n += fieldSize(kv.Key, kv.Value)
	}
	return n - min(len(f), 1)
}

// fieldSize is the length of a field in a canonical JSON object, with the
// comma that follows it.
func fieldSize(k string, v json.RawMessage) int { return canon.QuotedLen(k) + 1 + len(v) + 1 }

// CanonicalFields turns caller-supplied JSON-compatible values into the
// canonical form a command carries. A nil Go value becomes JSON null.
func CanonicalFields(what string, in map[string]any) (map[string]json.RawMessage, error) {
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad field names the error, every time
	out := make(map[string]json.RawMessage, len(in))
	for _, k := range keys {
		c, err := canon.Value(in[k])
		if err != nil {
			return nil, errs.Errorf(errs.CodeInvalid, "%s field %q: %v", what, k, err)
		}
		out[k] = c
	}
	return out, nil
}

// deleteNulls deletes the fields whose value is null, in place, and
// returns the map: never nil, so a node without properties stores and
// encodes an empty map, as it always has.
func deleteNulls(fields map[string]json.RawMessage) map[string]json.RawMessage {
	if fields == nil {
		return map[string]json.RawMessage{}
	}
	for k, v := range fields { // order-free: each null is deleted
		if bytes.Equal(v, null) {
			delete(fields, k)
		}
	}
	return fields
}

// clone returns a deep copy, so stored nodes are never shared or mutated.
func (n *Record) clone() Record {
	c := *n
	c.Labels = append([]string{}, n.Labels...)
	c.Properties = make(map[string]json.RawMessage, len(n.Properties))
	for k, v := range n.Properties {
		c.Properties[k] = append(json.RawMessage{}, v...)
	}
	return c
}
