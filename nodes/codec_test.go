package nodes

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/arbiterhq/arbiter/log"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// name draws strings on both sides of msgpack's fixstr and str8 limits.
func name() *rapid.Generator[string] {
	return rapid.OneOf(rapid.StringN(0, 3, -1), rapid.StringN(30, 33, -1), rapid.StringN(254, 257, -1))
}

func genNode(t *rapid.T) Record {
	n := Record{
		NodeID:        name().Draw(t, "id"),
		Version:       rapid.Uint64().Draw(t, "version"),
		CreatedIndex:  rapid.OneOf(rapid.Uint64(), rapid.Uint64Range(0, 300)).Draw(t, "created"),
		ModifiedIndex: rapid.OneOf(rapid.Uint64(), rapid.Uint64Range(0, 70000)).Draw(t, "modified"),
	}
	if rapid.Bool().Draw(t, "has labels") {
		n.Labels = rapid.SliceOfN(name(), 0, 17).Draw(t, "labels")
	}
	if rapid.Bool().Draw(t, "has properties") {
		value := rapid.OneOf(
			rapid.Just(json.RawMessage(nil)),
			rapid.Custom(func(t *rapid.T) json.RawMessage {
				return json.RawMessage(rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "json"))
			}))
		n.Properties = rapid.MapOfN(name(), value, 0, 20).Draw(t, "properties")
	}
	return n
}

// The direct encoders write exactly what reflection and the canonical
// pass write.
func TestResultsAppendWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		flag := rapid.Bool().Draw(t, "flag")
		for _, v := range []log.Appender{n, CreateResult{Created: flag, Node: n, Replayed: true, TimeMs: 5}, CASResult{Swapped: flag, Node: n, Failed: []Failure{{}}}} {
			if err := log.CheckAppender(v); err != nil {
				t.Fatal(err)
			}
			// Marshal's buffer, sized by the bound, holds the whole result.
			if s, ok := v.(log.SizeBounder); ok {
				if b, _ := v.AppendMsgpack(nil); len(b) > s.EncodedSizeBound() {
					t.Fatalf("%T encoded %d bytes, more than the %d bound", v, len(b), s.EncodedSizeBound())
				}
			}
		}
	})
}

// A create's result, written from the stored node, has the bytes of
// the CreateResult a client decodes, for stored labels nil or not.
func TestStoredResultWritesCreateResult(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		stored := storedOf(&n)
		if rapid.Bool().Draw(t, "nil labels") {
			stored.Labels = nil
		}
		created := rapid.Bool().Draw(t, "created")
		got, err := log.Marshal(storedResult{created: created, node: stored})
		if err != nil {
			t.Fatal(err)
		}
		want := log.MustMarshal(CreateResult{Created: created, Node: *stored.node()})
		if !bytes.Equal(got, want) {
			t.Fatalf("stored result\n got %x\nwant %x", got, want)
		}
		if bound := (storedResult{node: stored}).EncodedSizeBound(); len(got) > bound {
			t.Fatalf("encoded %d bytes, more than the %d bound", len(got), bound)
		}
		// What a handler returns (boxed) writes the same bytes.
		boxed, err := log.Marshal(storedResult{created: created, node: stored}.boxed())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(boxed, want) {
			t.Fatalf("boxed result\n got %x\nwant %x", boxed, want)
		}
	})
}

func genCreate(t *rapid.T) CreateCommand {
	n := genNode(t)
	c := CreateCommand{NodeID: n.NodeID, Labels: n.Labels, Properties: n.Properties}
	if rapid.Bool().Draw(t, "has set_now") {
		c.SetNow = rapid.MapOfN(name(), rapid.Int64(), 0, 5).Draw(t, "set_now")
	}
	if rapid.Bool().Draw(t, "has set_index") {
		c.SetIndex = rapid.SliceOfN(name(), 0, 5).Draw(t, "set_index")
	}
	return c
}

// The direct decoder takes what log.Marshal writes (but the empty lists
// and maps it leaves to the reflective decoder) and agrees with it.
func TestDecodeCreateDirectTakesWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCreate(t)
		b, err := log.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, version := range []uint16{1, IndexVersion} {
			fast, ok := decodeCreateDirect(b, version >= IndexVersion)
			slow, err := decodeCreateReflective(&log.Command{Version: version, Payload: b})
			leftToReflection := (c.Labels != nil && len(c.Labels) == 0) || (c.SetNow != nil && len(c.SetNow) == 0)
			switch {
			case version == 1 && len(c.SetIndex) > 0:
				if ok || err == nil {
					t.Fatalf("version 1 with set_index: direct took it %v, reflective error %v", ok, err)
				}
			case !ok && !leftToReflection:
				t.Fatalf("version %d: declined %x", version, b)
			case ok && err != nil:
				t.Fatalf("version %d: direct took %x, reflective refuses: %v", version, b, err)
			case ok:
				if diff := cmp.Diff(argsOf(slow), fast); diff != "" {
					t.Fatalf("version %d: decoders disagree (-reflective +direct):\n%s", version, diff)
				}
			}
		}
	})
}

// Whatever the direct decoder takes, the reflective one takes with an
// equal result.
func FuzzDecodeCreateAgrees(f *testing.F) {
	for _, c := range []CreateCommand{
		{NodeID: "n", Labels: []string{"a", "b"}, Properties: map[string]json.RawMessage{"owner": json.RawMessage(`"x"`), "gone": nil}},
		{NodeID: "m", SetNow: map[string]int64{"at": -5}, IndexFields: IndexFields{SetIndex: []string{"seq"}}, Properties: map[string]json.RawMessage{}},
	} {
		f.Add(log.MustMarshal(c), true)
		f.Add(log.MustMarshal(c), false)
	}
	f.Fuzz(func(t *testing.T, b []byte, v2 bool) {
		fast, ok := decodeCreateDirect(b, v2)
		if !ok {
			return
		}
		version := uint16(1)
		if v2 {
			version = IndexVersion
		}
		slow, err := decodeCreateReflective(&log.Command{Version: version, Payload: b})
		if err != nil {
			t.Fatalf("direct decoder took %x, the reflective one refuses it: %v", b, err)
		}
		if diff := cmp.Diff(argsOf(slow), fast); diff != "" {
			t.Fatalf("decoders disagree on %x (-reflective +direct):\n%s", b, diff)
		}
	})
}

// The stored rows' direct encoders write what reflection and the
// canonical pass write (what every snapshot holds).
func TestStoredRowsAppendWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		stored := storedOf(&n)
		for _, v := range []log.Appender{stored, &labelRow{Label: name().Draw(t, "label"), NodeID: n.NodeID}} {
			if err := log.CheckAppender(v); err != nil {
				t.Fatal(err)
			}
		}
		// The buffer it reserves holds the whole node.
		if b, _ := stored.AppendMsgpack(nil); len(b) > stored.encodedSizeBound() {
			t.Fatalf("encoded %d bytes, more than the %d bound", len(b), stored.encodedSizeBound())
		}
	})
}

// The stored rows' direct decoders take what Marshal writes (but empty
// label lists and nil property values, left to reflection) and agree
// with the reflective decoder.
func TestDecodeRowsTakeWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		stored := storedOf(&n)
		b := log.MustMarshal(stored)
		var fast, slow storedNode
		ok := fast.DecodeDirect(b)
		if err := log.Unmarshal(b, &slow); err != nil {
			t.Fatal(err)
		}
		leftToReflection := n.Labels != nil && len(n.Labels) == 0
		for _, v := range n.Properties {
			leftToReflection = leftToReflection || v == nil
		}
		switch {
		case !ok && !leftToReflection:
			t.Fatalf("declined %x", b)
		case ok:
			if diff := cmp.Diff(slow, fast, cmp.AllowUnexported(storedNode{}, field{})); diff != "" {
				t.Fatalf("decoders disagree (-reflective +direct):\n%s", diff)
			}
		}
		label := labelRow{Label: name().Draw(t, "label"), NodeID: n.NodeID}
		var got labelRow
		if !got.DecodeDirect(log.MustMarshal(&label)) || got != label {
			t.Fatalf("label row %+v decoded as %+v", label, got)
		}
	})
}

// Whatever a row's direct decoder takes, the reflective one takes with an
// equal result; what it declines it leaves untouched.
func FuzzDecodeRowsAgree(f *testing.F) {
	n := Record{NodeID: "n", Labels: []string{"a"}, Version: 3, CreatedIndex: 9, ModifiedIndex: 300,
		Properties: map[string]json.RawMessage{"owner": json.RawMessage(`"x"`), "a-much-longer-property-name-here": json.RawMessage("1")}}
	f.Add(log.MustMarshal(storedOf(&n)), false)
	f.Add(log.MustMarshal(&labelRow{Label: "l", NodeID: "n"}), true)
	f.Fuzz(func(t *testing.T, b []byte, label bool) {
		// Through a Strings (a restore's), twice so that the second
		// read shares what the first kept: the same answer.
		shared := log.NewStrings()
		if label {
			var fast, slow labelRow
			for range 2 {
				var s labelRow
				if s.DecodeSharing(b, shared) != fast.DecodeDirect(b) || s != fast {
					t.Fatalf("sharing decoder read %x as %+v, the direct one as %+v", b, s, fast)
				}
			}
			if !fast.DecodeDirect(b) {
				if fast != (labelRow{}) {
					t.Fatalf("declined %x but changed the row: %+v", b, fast)
				}
				return
			}
			if err := log.Unmarshal(b, &slow); err != nil || slow != fast {
				t.Fatalf("direct decoder took %x as %+v; reflective: %+v, %v", b, fast, slow, err)
			}
			return
		}
		var fast, slow storedNode
		for range 2 {
			var s storedNode
			took := s.DecodeSharing(b, shared)
			if took != fast.DecodeDirect(b) {
				t.Fatalf("sharing decoder took %x: %v, the direct one: %v", b, took, !took)
			}
			if diff := cmp.Diff(fast, s, cmp.AllowUnexported(storedNode{}, field{})); diff != "" {
				t.Fatalf("sharing and direct decoders disagree on %x (-direct +sharing):\n%s", b, diff)
			}
			fast = storedNode{}
		}
		if !fast.DecodeDirect(b) {
			if diff := cmp.Diff(storedNode{}, fast, cmp.AllowUnexported(storedNode{}, field{})); diff != "" {
				t.Fatalf("declined %x but changed the node:\n%s", b, diff)
			}
			return
		}
		if err := log.Unmarshal(b, &slow); err != nil {
			t.Fatalf("direct decoder took %x, the reflective one refuses it: %v", b, err)
		}
		if diff := cmp.Diff(slow, fast, cmp.AllowUnexported(storedNode{}, field{})); diff != "" {
			t.Fatalf("decoders disagree on %x (-reflective +direct):\n%s", b, diff)
		}
	})
}

// Whatever a result's direct decoder takes, the reflective one takes with
// an equal result; what it declines it leaves untouched.
func FuzzDecodeResultsAgree(f *testing.F) {
	n := Record{NodeID: "n", Labels: []string{"a"}, Version: 3, CreatedIndex: 9, ModifiedIndex: 300,
		Properties: map[string]json.RawMessage{"owner": json.RawMessage(`"x"`), "fence": json.RawMessage("1")}}
	bare := Record{NodeID: "m", Labels: []string{}, Properties: map[string]json.RawMessage{}, Version: 1}
	for _, node := range []Record{n, bare} {
		f.Add(log.MustMarshal(CreateResult{Created: true, Node: node}), false)
		f.Add(log.MustMarshal(CASResult{Swapped: true, Node: node}), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, cas bool) {
		if cas {
			var fast, slow CASResult
			checkResultDecoders(t, b, &fast, &slow, fast.DecodeDirect(b))
			return
		}
		var fast, slow CreateResult
		checkResultDecoders(t, b, &fast, &slow, fast.DecodeDirect(b))
	})
}

// checkResultDecoders: a declined fast is still zero; a taken one equals
// what the reflective decoder reads into slow.
func checkResultDecoders[R any](t *testing.T, b []byte, fast, slow *R, took bool) {
	t.Helper()
	var zero R
	if !took {
		if diff := cmp.Diff(zero, *fast); diff != "" {
			t.Fatalf("declined %x but changed the result:\n%s", b, diff)
		}
		return
	}
	if err := log.Unmarshal(b, slow); err != nil {
		t.Fatalf("direct decoder took %x, the reflective one refuses it: %v", b, err)
	}
	if diff := cmp.Diff(*slow, *fast); diff != "" {
		t.Fatalf("decoders disagree on %x (-reflective +direct):\n%s", b, diff)
	}
}

// The result decoders take every result Apply writes (but nil property
// values, which results never hold) and read it back as it was.
func TestDecodeResultsTakeWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t)
		for k, v := range n.Properties {
			if v == nil {
				delete(n.Properties, k)
			}
		}
		want := CreateResult{Created: rapid.Bool().Draw(t, "created"), Node: n}
		var got CreateResult
		if !got.DecodeDirect(log.MustMarshal(want)) {
			t.Fatalf("declined %+v", want)
		}
		var slow CreateResult
		if err := log.Unmarshal(log.MustMarshal(want), &slow); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(slow, got); diff != "" {
			t.Fatalf("create result (-reflective +direct):\n%s", diff)
		}
		cas := CASResult{Swapped: rapid.Bool().Draw(t, "swapped"), Node: n}
		var gotCAS, slowCAS CASResult
		if !gotCAS.DecodeDirect(log.MustMarshal(cas)) {
			t.Fatalf("declined %+v", cas)
		}
		if err := log.Unmarshal(log.MustMarshal(cas), &slowCAS); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(slowCAS, gotCAS); diff != "" {
			t.Fatalf("CAS result (-reflective +direct):\n%s", diff)
		}
	})
}
