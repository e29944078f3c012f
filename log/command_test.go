package log

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/arbiterhq/arbiter/identity"
	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	in := Command{Type: 7, Version: 2, Stamp: 1700000000123, Principal: identity.Principal{ID: "alice"},
		IdemScope: "nodes", IdemKey: "k1", Payload: MustMarshal(map[string]any{"b": 1, "a": "x"})}
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Fatalf("round trip (-in +out):\n%s", diff)
	}
	again, _ := Encode(out)
	if !bytes.Equal(b, again) {
		t.Fatal("re-encoding changed the bytes")
	}
}

func TestDecodeRejects(t *testing.T) {
	good, _ := Encode(Command{Type: 1, Payload: []byte{0xc0}})
	unknownField, _ := msgpack.Marshal(map[string]any{"t": 1, "zz": 1})
	cases := map[string][]byte{
		"empty":          nil,
		"format":         append([]byte{0x01}, good[1:]...),
		"truncated":      good[:len(good)-1],
		"trailing":       append(append([]byte{}, good...), 0x00),
		"type zero":      append([]byte{formatV1}, MustMarshal(&Command{})...),
		"unknown field":  append([]byte{formatV1}, unknownField...),
		"huge map claim": {formatV1, 0xdf, 0xff, 0xff, 0xff, 0xff},
		"float":          append([]byte{formatV1}, mustMsgpack(map[string]float64{"t": 1})...),
	}
	for name, b := range cases {
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Decode = %v, want ErrMalformed", name, err)
		}
	}
	long := string(bytes.Repeat([]byte("k"), MaxKeyBytes+1))
	if _, err := Encode(Command{Type: 1, IdemKey: long}); !errors.Is(err, ErrMalformed) {
		t.Errorf("over-long key accepted: %v", err)
	}
	// A scope may carry a whole tenant and more (MaxScopeBytes), not
	// beyond.
	scope := string(bytes.Repeat([]byte("s"), MaxScopeBytes))
	if _, err := Encode(Command{Type: 1, IdemScope: scope, IdemKey: "k"}); err != nil {
		t.Errorf("scope of %d bytes refused: %v", MaxScopeBytes, err)
	}
	if _, err := Encode(Command{Type: 1, IdemScope: scope + "s", IdemKey: "k"}); !errors.Is(err, ErrMalformed) {
		t.Errorf("over-long scope accepted: %v", err)
	}
}

func TestDigestIgnoresTransportFields(t *testing.T) {
	a := Command{Type: 3, Version: 1, Stamp: 1, Principal: identity.Principal{ID: "p"}, IdemScope: "s", IdemKey: "k1", Payload: []byte{1}}
	b := a
	b.Stamp, b.Principal, b.IdemKey = 99, identity.Principal{ID: "q"}, "k2"
	if a.Digest() != b.Digest() {
		t.Fatal("digest depends on stamp, principal or key")
	}
	b.Payload = []byte{2}
	if a.Digest() == b.Digest() {
		t.Fatal("digest ignores payload")
	}
}

func TestCheckShape(t *testing.T) {
	ok := [][]byte{MustMarshal(map[string]any{"a": []any{1, "x", nil, true, []byte{1, 2}}}), {0xc0}, {0x05}}
	for _, b := range ok {
		if err := CheckShape(b); err != nil {
			t.Errorf("CheckShape(%x) = %v", b, err)
		}
	}
	deep := bytes.Repeat([]byte{0x91}, maxDepth+2)
	deep = append(deep, 0xc0)
	bad := [][]byte{{}, {0xc1}, {0x92, 0x01}, {0xdd, 0, 0, 0, 9}, {0xa3, 'a'}, deep, {0xcb, 0, 0, 0, 0, 0, 0, 0, 0}, {0xd4, 1, 1}}
	for _, b := range bad {
		if err := CheckShape(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("CheckShape(%x) = %v, want ErrMalformed", b, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := Encode(Command{Type: 5, Version: 1, Stamp: 9, Principal: identity.Principal{ID: "x"}, IdemKey: "k", Payload: []byte{0x80}})
	f.Add(good)
	f.Add([]byte{formatV1, 0x80})
	f.Add([]byte{formatV1, 0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes must re-encode and decode to the same command.
		again, err := Encode(c)
		if err != nil {
			t.Fatalf("decoded command does not encode: %v", err)
		}
		c2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded command does not decode: %v", err)
		}
		if diff := cmp.Diff(c, c2); diff != "" {
			t.Fatalf("unstable round trip:\n%s", diff)
		}
	})
}

func mustMsgpack(v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Go randomizes map iteration; Marshal must not let that reach the bytes,
// for any map type, at any depth.
func TestMarshalIsCanonicalForEveryMapType(t *testing.T) {
	type row struct {
		Props map[string][]byte          `msgpack:"props"`
		Deep  map[string]map[uint64]bool `msgpack:"deep"`
	}
	v := row{Props: map[string][]byte{}, Deep: map[string]map[uint64]bool{}}
	for i := 0; i < 50; i++ {
		k := string(rune('a'+i%26)) + string(rune('A'+i/26))
		v.Props[k] = []byte{byte(i)}
		v.Deep[k] = map[uint64]bool{uint64(i): true, uint64(i + 100): false}
	}
	first := MustMarshal(v)
	for i := 0; i < 20; i++ {
		if !bytes.Equal(first, MustMarshal(v)) {
			t.Fatal("Marshal of the same value gave different bytes")
		}
	}
	var back row
	if err := Unmarshal(first, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v, back); diff != "" {
		t.Fatalf("round trip:\n%s", diff)
	}
	if _, err := Marshal(map[string]float64{"x": 1}); err == nil {
		t.Fatal("a float was marshaled")
	}
}

func TestCanonicalRejectsDuplicateKeys(t *testing.T) {
	dup := []byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'a', 0x02}
	if _, err := Canonical(dup); !errors.Is(err, ErrMalformed) {
		t.Fatalf("duplicate keys accepted: %v", err)
	}
}

// Canonical never panics, is idempotent, and keeps every map's entries.
func FuzzCanonical(f *testing.F) {
	f.Add(MustMarshal(map[string]any{"b": map[string]int{"z": 1, "a": 2}, "a": []any{map[string]bool{"y": true, "x": false}}}))
	f.Add([]byte{0x82, 0xa1, 'b', 0x01, 0xa1, 'a', 0x02})
	f.Add([]byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'a', 0x02})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Canonical(b)
		if err != nil {
			return
		}
		again, err := Canonical(c)
		if err != nil || !bytes.Equal(c, again) {
			t.Fatalf("not idempotent: %x -> %x -> %x (%v)", b, c, again, err)
		}
		if len(c) != len(b) {
			t.Fatalf("length changed: %d -> %d", len(b), len(c))
		}
		// reflect.DeepEqual, not cmp.Diff: cmp takes exponential time on
		// deeply nested slices of interfaces.
		var x, y any
		if msgpack.Unmarshal(b, &x) == nil && msgpack.Unmarshal(c, &y) == nil && !reflect.DeepEqual(x, y) {
			t.Fatalf("value changed: %#v -> %#v", x, y)
		}
	})
}

// The digest is stored in every ledger row of every snapshot, and a retry
// compares against it: its bytes must never change. The reference is the
// digest as first written, with a streaming hasher; the payloads cross
// the size of Digest's stack buffer.
func TestDigestIsTheStoredOne(t *testing.T) {
	reference := func(c *Command) [32]byte {
		h := sha256.New()
		var hdr [4]byte
		binary.BigEndian.PutUint16(hdr[0:], uint16(c.Type))
		binary.BigEndian.PutUint16(hdr[2:], c.Version)
		h.Write(hdr[:])
		for _, part := range [][]byte{[]byte(c.IdemScope), c.Payload} {
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], uint64(len(part)))
			h.Write(n[:])
			h.Write(part)
		}
		var d [32]byte
		h.Sum(d[:0])
		return d
	}
	for _, size := range []int{0, 1, 100, 490, 491, 492, 512, 4096, 70_000} {
		c := Command{Type: 1030, Version: 3, IdemScope: "t|7:tenant-a", IdemKey: "k", Payload: bytes.Repeat([]byte{0xa5}, size)}
		if got, want := c.Digest(), reference(&c); got != want {
			t.Fatalf("payload of %d bytes: digest %x, want %x", size, got, want)
		}
	}
	c := Command{Type: 1, Version: 1, IdemScope: "node", Payload: []byte{0x80}}
	if allocs := testing.AllocsPerRun(10, func() { _ = c.Digest() }); allocs != 0 {
		t.Fatalf("Digest of a small command: %.0f allocations, want 0", allocs)
	}
}
