package nodes

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/arbiterhq/arbiter/internal/canon"
)

// marshalNodeReflective is Record.MarshalJSON as it was before json.go's
// appenders: encoding/json over a copy of the node with its properties in
// full digits. It stays as the oracle of FuzzNodeJSONAgrees.
func marshalNodeReflective(n Record) ([]byte, error) {
	type plain Record // without MarshalJSON
	p := plain(n)
	if n.Properties != nil {
		p.Properties = make(map[string]json.RawMessage, len(n.Properties))
		for k, v := range n.Properties {
			p.Properties[k] = canon.PlainIntegers(v)
		}
	}
	return json.Marshal(p)
}

// encodeCreateReflective is what domain.WriteJSON wrote of a create's
// answer before CreateResult.AppendJSON, the newline included.
func encodeCreateReflective(r CreateResult) ([]byte, error) {
	node, err := marshalNodeReflective(r.Node)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err = enc.Encode(struct {
		Created  bool            `json:"created"`
		Node     json.RawMessage `json:"node"`
		Replayed bool            `json:"replayed,omitempty"`
	}{r.Created, node, r.Replayed})
	return b.Bytes(), err
}

func FuzzNodeJSONAgrees(f *testing.F) {
	f.Add("RMDD-27", "concept", "", uint8(1), "owner", []byte(`"host-a"`), "fence", []byte(`1`), uint64(3), true, false)
	f.Add("a<b>&c\u2028", "\x00\b\f\n\r\t\x7f", "\xff", uint8(2), "k\"\\", []byte(`{"x":["<&>", 1e30, -0.5]}`), "\u2029", []byte(" [ 1 , \"a\u2028b\" ] "), uint64(1<<63), false, true)
	f.Add("id with spaces", "l 1", "", uint8(1), "a b", []byte(`{ "c d" : " e\t\" f " }`), "g", []byte("\t[\n]\r"), uint64(7), true, false)
	f.Add("", "", "", uint8(0), "n", []byte(`123456789012345678901234567890`), "big", []byte(`1e22`), uint64(0), true, true)
	f.Fuzz(func(t *testing.T, id, label1, label2 string, labels uint8, key1 string, val1 []byte, key2 string, val2 []byte, version uint64, created, replayed bool) {
		n := Record{NodeID: id, Version: version, CreatedIndex: version / 2, ModifiedIndex: version / 3}
		switch labels % 3 {
		case 1:
			n.Labels = []string{label1}
		case 2:
			n.Labels = []string{label1, label2}
		}
		if json.Valid(val1) && json.Valid(val2) { // stored properties are valid JSON
			n.Properties = map[string]json.RawMessage{key1: val1, key2: val2}
		}
		want, err := marshalNodeReflective(n)
		if err != nil {
			t.Skip(err)
		}
		got, err := n.MarshalJSON()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%+v:\n got %s (%v)\nwant %s", n, got, err, want)
		}
		r := CreateResult{Created: created, Node: n, Replayed: replayed}
		wantReply, err := encodeCreateReflective(r)
		if err != nil {
			t.Skip(err)
		}
		if gotReply := append(r.AppendJSON(nil), '\n'); !bytes.Equal(gotReply, wantReply) {
			t.Fatalf("%+v:\n got %s\nwant %s", r, gotReply, wantReply)
		}
	})
}

func TestNilNodeAndResultAppendNull(t *testing.T) {
	var n *Record
	var r *CreateResult
	if got := string(r.AppendJSON(n.AppendJSON(nil))); got != "nullnull" {
		t.Fatalf("got %s", got)
	}
}
