package log

import (
	"bytes"
	"testing"

	"github.com/arbiterhq/arbiter/identity"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// text draws strings around every length boundary of msgpack's string
// headers (fixstr, str8, str16).
func text() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.StringN(0, 4, -1),
		rapid.StringN(30, 33, -1),
		rapid.StringN(254, 257, -1),
		rapid.Custom(func(t *rapid.T) string {
			return string(bytes.Repeat([]byte{'x'}, rapid.IntRange(65534, 65537).Draw(t, "n")))
		}),
	)
}

func genCommand(t *rapid.T) Command {
	list := func(label string) []string {
		return rapid.SliceOfN(text(), 0, 17).Draw(t, label)
	}
	var payload []byte
	switch rapid.IntRange(0, 3).Draw(t, "payload kind") {
	case 0: // nil
	case 1:
		payload = []byte{}
	case 2:
		payload = rapid.SliceOfN(rapid.Byte(), 1, 300).Draw(t, "payload")
	default:
		payload = bytes.Repeat([]byte{0x80}, rapid.IntRange(65534, 65537).Draw(t, "payload size"))
	}
	return Command{
		Type:    Type(rapid.Uint16().Draw(t, "type")),
		Version: rapid.Uint16().Draw(t, "version"),
		Stamp: rapid.OneOf(rapid.Int64(), rapid.Int64Range(-300, 300),
			rapid.SampledFrom([]int64{-1 << 63, 1<<63 - 1, -1 << 31, 1<<32 - 1, 1 << 32})).Draw(t, "stamp"),
		Principal: identity.Principal{ID: text().Draw(t, "id"), Tenants: list("tenants"), Roles: list("roles")},
		IdemScope: text().Draw(t, "scope"),
		IdemKey:   text().Draw(t, "key"),
		Adapter:   text().Draw(t, "adapter"),
		Payload:   payload,
	}
}

// The direct encoder writes the bytes the reflective encoder and the
// canonical pass write, for every command.
func TestAppendCommandWritesWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCommand(t)
		want, err := MarshalReflective(&c)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendCommand(nil, &c); !bytes.Equal(got, want) {
			t.Fatalf("appendCommand\n got %x\nwant %x", got, want)
		}
	})
}

// The direct decoder takes every encoded command but one with a nil
// payload, and agrees with the reflective decoder on it.
func TestDecodeCommandTakesWhatEncodeWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCommand(t)
		b := appendCommand(nil, &c)
		view := rapid.Bool().Draw(t, "view")
		fast, ok := decodeCommand(b, view)
		if c.Payload == nil {
			if ok {
				t.Fatal("took a nil payload, which it leaves to the reflective decoder")
			}
			return
		}
		if !ok {
			t.Fatalf("declined %x", b)
		}
		var slow Command
		if err := Unmarshal(b, &slow); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Fatalf("decoders disagree (-reflective +direct):\n%s", diff)
		}
		// A copied payload owns its bytes; a view shares b's, and an
		// append to it cannot write over what follows it in b.
		before := bytes.Clone(b)
		payload := bytes.Clone(fast.Payload)
		_ = append(fast.Payload, 0xff)
		if !bytes.Equal(b, before) {
			t.Fatalf("an append to the payload (view %v) wrote into the command's bytes", view)
		}
		for i := range b {
			b[i] ^= 0x5a
		}
		if changed := !bytes.Equal(fast.Payload, payload); changed != (view && len(payload) > 0) {
			t.Fatalf("view %v: the payload changed with the command's bytes: %v", view, changed)
		}
	})
}

// Whatever the direct decoder takes, the reflective decoder takes too,
// with an equal result: the direct one only ever saves time.
func FuzzDecodeCommandAgrees(f *testing.F) {
	for _, c := range []Command{
		{Type: 5, Version: 1, Stamp: 9, Principal: identity.Principal{ID: "x"}, IdemKey: "k", Payload: []byte{0x80}},
		{Type: 300, Version: 2, Stamp: -40, Principal: identity.Principal{ID: "p", Tenants: []string{"*"}, Roles: []string{"admin", "reader"}},
			IdemScope: "s", IdemKey: "k", Adapter: "authority", Payload: []byte{}},
	} {
		f.Add(appendCommand(nil, &c))
	}
	f.Add([]byte{0x82, 0xa1, 'd', 0xc4, 0x00, 0xa1, 'd', 0xc4, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := decodeCommand(b, false)
		if view, viewOK := decodeCommand(b, true); viewOK != ok || !cmp.Equal(view, fast) {
			t.Fatalf("the view decoder answers %v %+v, the copying one %v %+v", viewOK, view, ok, fast)
		}
		if !ok {
			return
		}
		var slow Command
		if err := Unmarshal(b, &slow); err != nil {
			t.Fatalf("direct decoder took %x, the reflective one refuses it: %v", b, err)
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Fatalf("decoders disagree on %x (-reflective +direct):\n%s", b, diff)
		}
	})
}
