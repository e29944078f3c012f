package nodes

import (
	"encoding/json"
	"slices"

	"github.com/arbiterhq/arbiter/log"
)

// Every create and CAS encodes its result in Apply, on every replica, and
// msgpack's reflection plus the canonical pass was a tenth of a create's
// apply. These write the same bytes directly (log.Appender); the
// property test in codec_test.go holds them to log.MarshalReflective.

// EncodedSizeBound is at least the result's encoded size (log.SizeBounder):
// Apply encodes a CAS's result at once. (A create's is a storedResult.)
func (r CASResult) EncodedSizeBound() int { return 16 + r.Node.encodedSizeBound() }

// AppendMsgpack writes the result as log.MarshalReflective does.
func (r CreateResult) AppendMsgpack(b []byte) ([]byte, error) {
	return appendResult(b, r.Node.appendMsgpack, "created", r.Created), nil
}

// AppendMsgpack writes the result as log.MarshalReflective does.
func (r CASResult) AppendMsgpack(b []byte) ([]byte, error) {
	return appendResult(b, r.Node.appendMsgpack, "swapped", r.Swapped), nil
}

// appendResult writes a create's or a CAS's result: the node, written by
// node, and the outcome flag (a key of 7 bytes, after "node" in
// canonical order: shorter first).
func appendResult(b []byte, node func([]byte) []byte, flag string, outcome bool) []byte {
	b = node(append(b, 0x82, 0xa4, 'n', 'o', 'd', 'e'))
	return log.AppendBool(log.AppendString(b, flag), outcome)
}

// storedResult is a create's result as Apply returns it: written
// straight from the stored node, with the bytes of
// CreateResult{Created: created, Node: *node.node()}, without making that
// Node (a map of its properties, copies of its labels and values) only
// to encode it at once. TestStoredResultWritesCreateResult holds the two
// to the same bytes.
type storedResult struct {
	created bool
	node    *storedNode
}

// EncodedSizeBound is at least the result's encoded size (log.SizeBounder).
func (r storedResult) EncodedSizeBound() int { return 16 + r.node.encodedSizeBound() }

// boxed is r as a handler returns it: createdResult or foundResult, a
// struct of one pointer, which an interface holds without allocating
// (storedResult, a bool and a pointer, took an allocation per create on
// every replica; issue 42). Both write what r writes.
func (r storedResult) boxed() any {
	if r.created {
		return createdResult{r.node}
	}
	return foundResult{r.node}
}

// createdResult is storedResult{created: true, node: node}.
type createdResult struct{ node *storedNode }

func (r createdResult) EncodedSizeBound() int                  { return r.unboxed().EncodedSizeBound() }
func (r createdResult) AppendMsgpack(b []byte) ([]byte, error) { return r.unboxed().AppendMsgpack(b) }
func (r createdResult) unboxed() storedResult                  { return storedResult{created: true, node: r.node} }

// foundResult is storedResult{created: false, node: node}.
type foundResult struct{ node *storedNode }

func (r foundResult) EncodedSizeBound() int                  { return r.unboxed().EncodedSizeBound() }
func (r foundResult) AppendMsgpack(b []byte) ([]byte, error) { return r.unboxed().AppendMsgpack(b) }
func (r foundResult) unboxed() storedResult                  { return storedResult{created: false, node: r.node} }

// AppendMsgpack writes the result as log.MarshalReflective writes its
// CreateResult.
func (r storedResult) AppendMsgpack(b []byte) ([]byte, error) {
	s := r.node
	for _, f := range s.Properties {
		if f.Value == nil {
			// Never stored (deleteNulls), but node() would make it an
			// empty value: write what it would.
			return CreateResult{Created: r.created, Node: *s.node()}.AppendMsgpack(b)
		}
	}
	labels := s.Labels
	if labels == nil {
		labels = []string{} // as node() gives them
	}
	node := func(b []byte) []byte {
		return appendNode(b, s.NodeID, labels, s.Version, s.CreatedIndex, s.ModifiedIndex, s.Properties.appendMsgpack)
	}
	return appendResult(b, node, "created", r.created), nil
}

// AppendMsgpack writes the node as log.MarshalReflective does.
func (n Record) AppendMsgpack(b []byte) ([]byte, error) { return n.appendMsgpack(b), nil }

func (n *Record) appendMsgpack(b []byte) []byte {
	return appendNode(b, n.NodeID, n.Labels, n.Version, n.CreatedIndex, n.ModifiedIndex,
		func(b []byte) []byte { return appendProperties(b, n.Properties) })
}

// appendNode writes a node's map, Node's or storedNode's: the same keys,
// in canonical order (shorter first, then bytewise), with the properties
// written by props.
func appendNode(b []byte, id string, labels []string, version, created, modified uint64, props func([]byte) []byte) []byte {
	b = log.AppendMapLen(b, 6)
	b = log.AppendString(b, "labels")
	if labels == nil {
		b = log.AppendNil(b)
	} else {
		b = log.AppendStrings(b, labels)
	}
	b = log.AppendString(log.AppendString(b, "node_id"), id)
	b = log.AppendUint(log.AppendString(b, "version"), version)
	b = props(log.AppendString(b, "properties"))
	b = log.AppendUint(log.AppendString(b, "created_index"), created)
	return log.AppendUint(log.AppendString(b, "modified_index"), modified)
}

// appendProperties writes a property map with its keys in canonical
// order; each value is canonical JSON, written as msgpack bin.
func appendProperties(b []byte, props map[string]json.RawMessage) []byte {
	if props == nil {
		return log.AppendNil(b)
	}
	var small [8]string
	keys := small[:0]
	for k := range props { // order-free: sorted below
		keys = append(keys, k)
	}
	log.SortKeys(keys)
	b = log.AppendMapLen(b, len(keys))
	for _, k := range keys {
		b = log.AppendBin(log.AppendString(b, k), props[k])
	}
	return b
}

// decodeCreateDirect reads a node_create payload in the canonical form
// log.Marshal writes, without reflection, for a command of version 2 or
// later when v2 is set (which alone may carry set_index). It answers false
// for any other form, which decodeByVersion then decodes, or refuses, as
// it always has; FuzzDecodeCreateAgrees holds the two to the same answer.
func decodeCreateDirect(b []byte, v2 bool) (createArgs, bool) {
	var c createArgs
	r := log.NewReader(b)
	r.Map(func(key []byte) {
		switch string(key) {
		case "labels":
			if !r.Nil() {
				c.Labels = r.Strs()
			}
		case "node_id":
			c.NodeID = r.Str()
		case "set_now":
			c.SetNow = readOffsets(r)
		case "set_index":
			if !v2 {
				r.Decline()
			}
			c.SetIndex = r.Strs()
		case "properties":
			if !r.Nil() {
				c.Properties = readFields(r)
			}
		default:
			r.Decline()
		}
	})
	if !r.Done() {
		return createArgs{}, false
	}
	return c, true
}

// createArgs is a node_create as Apply works on it: CreateCommand with
// its properties as fields, sorted by name, which is how the store keeps
// them. A map would be made only to be checked, then sorted into fields
// (about a fifth of a create's apply).
type createArgs struct {
	NodeID     string
	Labels     []string
	Properties fields
	SetNow     map[string]int64
	IndexFields
}

// argsOf is c as Apply works on it, sharing its labels and values.
func argsOf(c CreateCommand) createArgs {
	return createArgs{NodeID: c.NodeID, Labels: c.Labels, Properties: sortedFields(c.Properties),
		SetNow: c.SetNow, IndexFields: c.IndexFields}
}

// readFields reads a map of property values, each canonical JSON as a
// bin, or nil, as fields sorted by name (as fields.DecodeMsgpack sorts
// them). The values outlive the reader's buffer, a log entry's or a
// snapshot's, in the store: they are copied, all into one allocation.
func readFields(r *log.Reader) fields {
	n := r.MapLen()
	f := make(fields, 0, min(n, maxFieldsPreallocated))
	size := 0
	r.Entries(n, func(key string) { // the keys come distinct (canonical order)
		var v []byte
		if !r.Nil() {
			v = r.BinView()
			size += len(v)
		}
		f = append(f, field{Key: key, Value: v})
	})
	values := make([]byte, 0, size)
	for i, kv := range f {
		if kv.Value != nil {
			start := len(values)
			values = append(values, kv.Value...)
			f[i].Value = values[start:len(values):len(values)]
		}
	}
	f.sort()
	return f
}

// readOffsets reads set_now: a non-empty map of field to milliseconds
// (an empty one is omitted when encoded, and left to the reflective
// decoder when it is not).
func readOffsets(r *log.Reader) map[string]int64 {
	n := r.MapLen()
	if n == 0 {
		r.Decline()
		return nil
	}
	offsets := make(map[string]int64, n)
	r.Entries(n, func(key string) {
		offsets[key] = r.Int()
	})
	return offsets
}

// AppendMsgpack writes the stored node as log.MarshalReflective does:
// every snapshot writes each node this way, and reflection plus the
// canonical pass were most of a snapshot's work.
func (s *storedNode) AppendMsgpack(b []byte) ([]byte, error) {
	b = slices.Grow(b, s.encodedSizeBound())
	return appendNode(b, s.NodeID, s.Labels, s.Version, s.CreatedIndex, s.ModifiedIndex, s.Properties.appendMsgpack), nil
}

// encodedSizeBound is at least the node's encoded size: the keys and
// headers of appendNode (under 96 bytes), and per string or bin at most
// 5 bytes of header.
func (s *storedNode) encodedSizeBound() int {
	n := nodeSizeBound(s.NodeID, s.Labels)
	for _, f := range s.Properties {
		n += 10 + len(f.Key) + len(f.Value)
	}
	return n
}

// encodedSizeBound is storedNode's for a Node.
func (n *Record) encodedSizeBound() int {
	size := nodeSizeBound(n.NodeID, n.Labels)
	for k, v := range n.Properties { // order-free: a sum
		size += 10 + len(k) + len(v)
	}
	return size
}

// nodeSizeBound bounds a node's encoding without its properties.
func nodeSizeBound(id string, labels []string) int {
	n := 96 + 5 + len(id) + 5
	for _, l := range labels {
		n += 5 + len(l)
	}
	return n
}

// appendMsgpack writes the fields as a map in canonical key order (by
// length, then bytewise), where they are kept sorted bytewise: the two
// agree unless names of different lengths are out of length order.
func (f fields) appendMsgpack(b []byte) []byte {
	if f == nil {
		return log.AppendNil(b)
	}
	b = log.AppendMapLen(b, len(f))
	inOrder := true
	for i := 1; i < len(f) && inOrder; i++ {
		inOrder = len(f[i-1].Key) <= len(f[i].Key)
	}
	if inOrder {
		for _, kv := range f {
			b = log.AppendBin(log.AppendString(b, kv.Key), kv.Value)
		}
		return b
	}
	keys := make([]string, len(f))
	byKey := make(map[string]json.RawMessage, len(f))
	for i, kv := range f {
		keys[i] = kv.Key
		byKey[kv.Key] = kv.Value
	}
	log.SortKeys(keys)
	for _, k := range keys {
		b = log.AppendBin(log.AppendString(b, k), byKey[k])
	}
	return b
}

// AppendMsgpack writes the label row as log.MarshalReflective does.
func (l *labelRow) AppendMsgpack(b []byte) ([]byte, error) {
	b = log.AppendString(append(b, 0x82, 0xa5, 'l', 'a', 'b', 'e', 'l'), l.Label)
	return log.AppendString(log.AppendString(b, "node_id"), l.NodeID), nil
}

// DecodeDirect reads a create result in the canonical form its
// AppendMsgpack writes (log.DirectDecoder): the proposer of every create
// decodes one (fsm.Submit), and msgpack's reflection was 3% of the CPU
// of embedded proposers. FuzzDecodeResultsAgree holds it to the
// reflective decoder.
func (res *CreateResult) DecodeDirect(b []byte) bool {
	node, created, ok := readResult(b, "created")
	if ok {
		*res = CreateResult{Created: created, Node: node}
	}
	return ok
}

// DecodeDirect reads a CAS result as CreateResult.DecodeDirect reads a
// create's.
func (res *CASResult) DecodeDirect(b []byte) bool {
	node, swapped, ok := readResult(b, "swapped")
	if ok {
		*res = CASResult{Swapped: swapped, Node: node}
	}
	return ok
}

// readResult reads a result's map: its node, and the flag that flagKey
// names (the key after "node" in canonical order).
func readResult(b []byte, flagKey string) (node Record, flag, ok bool) {
	r := log.NewReader(b)
	r.Map(func(key []byte) {
		switch { // comparisons, not switch string(key): flagKey is no constant
		case string(key) == "node":
			readNode(r, &node)
		case string(key) == flagKey:
			flag = r.Bool()
		default:
			r.Decline()
		}
	})
	return node, flag, r.Done()
}

// readNode reads a node's map as appendNode writes it. An empty label
// list is an empty slice, as reflection reads it.
func readNode(r *log.Reader, n *Record) {
	r.Map(func(key []byte) {
		switch string(key) {
		case "labels":
			switch {
			case r.Nil():
			case r.EmptyArray():
				n.Labels = []string{}
			default:
				n.Labels = r.Strs()
			}
		case "node_id":
			n.NodeID = r.Str()
		case "version":
			n.Version = r.Uint64()
		case "properties":
			if !r.Nil() {
				n.Properties = readProperties(r)
			}
		case "created_index":
			n.CreatedIndex = r.Uint64()
		case "modified_index":
			n.ModifiedIndex = r.Uint64()
		default:
			r.Decline()
		}
	})
}

// DecodeDirect reads a stored node in the canonical form its
// AppendMsgpack writes (log.DirectDecoder), for restores and restarts;
// FuzzDecodeRowsAgree holds it to the reflective decoder.
func (s *storedNode) DecodeDirect(b []byte) bool { return s.DecodeSharing(b, nil) }

// DecodeSharing is DecodeDirect sharing, through shared, the label lists
// and property names that repeat across nodes (log.SharingDecoder): the
// label list too, which no one changes in place (an edit makes a new one).
func (s *storedNode) DecodeSharing(b []byte, shared *log.Strings) bool {
	var out storedNode
	r := log.NewReader(b)
	r.Share(shared)
	r.Map(func(key []byte) {
		switch string(key) {
		case "labels":
			if !r.Nil() {
				out.Labels = r.RepeatedStrs()
			}
		case "node_id":
			out.NodeID = r.Str()
		case "version":
			out.Version = r.Uint64()
		case "properties":
			if !r.Nil() {
				out.Properties = readFields(r)
			}
		case "created_index":
			out.CreatedIndex = r.Uint64()
		case "modified_index":
			out.ModifiedIndex = r.Uint64()
		default:
			r.Decline()
		}
	})
	if !r.Done() {
		return false
	}
	*s = out
	return true
}

// readProperties reads a map of property values, each canonical JSON as
// a bin, or nil.
func readProperties(r *log.Reader) map[string]json.RawMessage {
	n := r.MapLen()
	props := make(map[string]json.RawMessage, min(n, maxFieldsPreallocated))
	r.Entries(n, func(key string) {
		if r.Nil() {
			props[key] = nil
		} else {
			props[key] = r.Bin()
		}
	})
	return props
}

// DecodeDirect reads a label row in the canonical form its
// AppendMsgpack writes (log.DirectDecoder).
func (l *labelRow) DecodeDirect(b []byte) bool { return l.DecodeSharing(b, nil) }

// DecodeSharing is DecodeDirect sharing labels through shared
// (log.SharingDecoder).
func (l *labelRow) DecodeSharing(b []byte, shared *log.Strings) bool {
	var out labelRow
	r := log.NewReader(b)
	r.Share(shared)
	r.Map(func(key []byte) {
		switch string(key) {
		case "label":
			out.Label = r.Repeated()
		case "node_id":
			out.NodeID = r.Str()
		default:
			r.Decline()
		}
	})
	if !r.Done() {
		return false
	}
	*l = out
	return true
}
