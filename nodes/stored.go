package nodes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// storedNode is a Node as the state store keeps it. The difference is
// the properties: a sorted slice of fields instead of a map. A Go map
// spends a group of eight slots on the one or two fields most nodes
// carry, about 370 bytes a node; the slice spends 40 bytes a field.
// It encodes exactly as Node does (a msgpack map), so snapshots, state
// hashes and backups are the same bytes either way.
type storedNode struct {
	NodeID        string   `msgpack:"node_id"`
	Labels        []string `msgpack:"labels"`
	Properties    fields   `msgpack:"properties"`
	Version       uint64   `msgpack:"version"`
	CreatedIndex  uint64   `msgpack:"created_index"`
	ModifiedIndex uint64   `msgpack:"modified_index"`
}

// field is one property: its name and canonical JSON value.
type field struct {
	Key   string
	Value json.RawMessage
}

// fields are a node's properties sorted by name, each name once. Nil and
// empty differ as a nil and an empty map did.
type fields []field

// storedOf is n as the store keeps it. It shares n's labels and values,
// which nothing changes once the node is inserted.
func storedOf(n *Record) *storedNode {
	return &storedNode{NodeID: n.NodeID, Labels: n.Labels, Properties: sortedFields(n.Properties),
		Version: n.Version, CreatedIndex: n.CreatedIndex, ModifiedIndex: n.ModifiedIndex}
}

// sortedFields is m as fields, sharing its values; nil for a nil map.
func sortedFields(m map[string]json.RawMessage) fields {
	if m == nil {
		return nil
	}
	f := make(fields, 0, len(m))
	for k, v := range m { // order-free: sorted below
		f = append(f, field{Key: k, Value: v})
	}
	f.sort()
	return f
}

func (f fields) sort() {
	slices.SortFunc(f, func(a, b field) int { return strings.Compare(a.Key, b.Key) })
}

// find is where field k is, or would be inserted, and whether it is there.
func (f fields) find(k string) (int, bool) {
	return slices.BinarySearchFunc(f, k, func(kv field, k string) int { return strings.Compare(kv.Key, k) })
}

// has answers whether field k is there.
func (f fields) has(k string) bool {
	_, found := f.find(k)
	return found
}

// set sets field k to v, in its place by name.
func (f *fields) set(k string, v json.RawMessage) {
	i, found := f.find(k)
	if found {
		(*f)[i].Value = v
		return
	}
	*f = slices.Insert(*f, i, field{Key: k, Value: v})
}

// withoutNulls is f without the fields whose value is null, filtered in
// place: never nil, so that a node made without properties stores and
// encodes an empty map, as deleteNulls makes for one.
func (f fields) withoutNulls() fields {
	if f == nil {
		return fields{}
	}
	kept := f[:0]
	for _, kv := range f {
		if !bytes.Equal(kv.Value, null) {
			kept = append(kept, kv)
		}
	}
	clear(f[len(kept):])
	return kept
}

// node is a deep copy of s as a Record, the caller's to change.
func (s *storedNode) node() *Record {
	n := &Record{NodeID: s.NodeID, Labels: append([]string{}, s.Labels...),
		Version: s.Version, CreatedIndex: s.CreatedIndex, ModifiedIndex: s.ModifiedIndex}
	if s.Properties != nil {
		n.Properties = make(map[string]json.RawMessage, len(s.Properties))
		for _, f := range s.Properties {
			n.Properties[f.Key] = append(json.RawMessage{}, f.Value...)
		}
	}
	return n
}

// EncodeMsgpack writes the fields as a map of name to bytes, as a
// map[string]json.RawMessage encodes.
func (f fields) EncodeMsgpack(enc *msgpack.Encoder) error {
	if f == nil {
		return enc.EncodeNil()
	}
	if err := enc.EncodeMapLen(len(f)); err != nil {
		return err
	}
	for _, kv := range f {
		if err := enc.EncodeString(kv.Key); err != nil {
			return err
		}
		if err := enc.EncodeBytes(kv.Value); err != nil {
			return err
		}
	}
	return nil
}

// maxFieldsPreallocated bounds what a decoder allocates on the word of a
// map header; a longer map grows as its entries actually arrive.
const maxFieldsPreallocated = 64

// DecodeMsgpack reads what EncodeMsgpack writes, in any key order, and
// refuses a name given twice.
func (f *fields) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	if n < 0 {
		*f = nil
		return nil
	}
	out := make(fields, 0, min(n, maxFieldsPreallocated))
	for range n {
		k, err := dec.DecodeString()
		if err != nil {
			return err
		}
		v, err := dec.DecodeBytes()
		if err != nil {
			return err
		}
		out = append(out, field{Key: k, Value: v})
	}
	out.sort()
	for i := 1; i < len(out); i++ {
		if out[i].Key == out[i-1].Key {
			return fmt.Errorf("properties: field %q given twice", out[i].Key)
		}
	}
	*f = out
	return nil
}
