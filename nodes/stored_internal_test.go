package nodes

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/arbiterhq/arbiter/log"
	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"
)

// TestStoredNodeEncodesAsNode: a stored node's canonical encoding is the
// Node's, byte for byte (snapshots, backups and state hashes written
// before the compact form read the same), and decoding either gives the
// node back.
func TestStoredNodeEncodesAsNode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := Record{
			NodeID:        rapid.StringMatching(`[a-z0-9]{1,12}`).Draw(t, "id"),
			Labels:        rapid.SliceOfDistinct(rapid.StringMatching(`[a-z]{1,6}`), rapid.ID[string]).Draw(t, "labels"),
			Version:       rapid.Uint64().Draw(t, "version"),
			CreatedIndex:  rapid.Uint64().Draw(t, "created"),
			ModifiedIndex: rapid.Uint64().Draw(t, "modified"),
		}
		if !rapid.Bool().Draw(t, "nil properties") {
			n.Properties = map[string]json.RawMessage{}
			for _, k := range rapid.SliceOfDistinct(rapid.StringMatching(`[a-zA-Z_]{1,8}`), rapid.ID[string]).Draw(t, "keys") {
				n.Properties[k] = json.RawMessage(rapid.SampledFrom([]string{`1`, `"x"`, `null`, `{"a":[1,2]}`, `true`}).Draw(t, "value"))
			}
		}
		want, err := log.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := log.Marshal(storedOf(&n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, got) {
			t.Fatalf("stored node encodes as\n%x\nthe node as\n%x", got, want)
		}
		var back storedNode
		if err := log.Unmarshal(want, &back); err != nil {
			t.Fatalf("decode a Node's bytes as a stored node: %v", err)
		}
		if diff := cmp.Diff(&n, back.node()); diff != "" {
			t.Fatalf("node after the round trip (-want +got):\n%s", diff)
		}
	})
}

// TestStoredNodeRefusesAFieldTwice: a map naming a property twice (which a
// Go map cannot hold, so no Node encodes it) is refused, not resolved by
// whichever came last.
func TestStoredNodeRefusesAFieldTwice(t *testing.T) {
	type twice struct {
		NodeID     string   `msgpack:"node_id"`
		Labels     []string `msgpack:"labels"`
		Properties fields   `msgpack:"properties"`
	}
	// Plain msgpack: log's canonical encoder and shape check refuse
	// duplicate keys before the decoder sees them; this is the decoder's
	// own check.
	b, err := msgpack.Marshal(twice{NodeID: "n", Labels: []string{}, Properties: fields{{"a", json.RawMessage("1")}, {"a", json.RawMessage("2")}}})
	if err != nil {
		t.Fatal(err)
	}
	var s storedNode
	if err := msgpack.Unmarshal(b, &s); err == nil {
		t.Fatalf("decoded %+v from a map naming a field twice", s)
	}
}
