package canon

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// plainCases are values Plain decides, with its answer.
var plainCases = map[string]bool{
	`{}`: true, `[]`: true, `null`: true, `true`: true, `false`: true, `0`: true, `-7`: true, `""`: true,
	`{"a":1,"b":[true,null,"x<y&z"],"c":{"d":"é","e":-123456789012345}}`: true,
	`{"a":"\u2028"}`:         false, // an escape
	"{\"a\":\"\u2028\"}":     false, // the forms differ here
	"{\"a\":\"\u2029\"}":     false,
	"{\"a\":\"\x7f\"}":       false,
	"{\"a\":\"\xff\"}":       false,
	"{\"\U0001F600\":1}":     false, // a key beyond U+FFFF
	"{\"a\":\"\U0001F600\"}": true,  // a value may hold one
	`{"b":1,"a":2}`:          false, // unsorted
	`{"a":1,"a":2}`:          false, // a duplicate
	`{"a":1,"ab":2,"b":3}`:   true,
	`{"a": 1}`:               false, // whitespace
	` 1`:                     false,
	`1 `:                     false,
	`-0`:                     false,
	`01`:                     false,
	`1.0`:                    false,
	`1e3`:                    false,
	`123456789012345`:        true,
	`1234567890123456`:       false, // more digits than Plain reads
	`"a\"b"`:                 false,
	`{"a":1}x`:               false,
	`[1,]`:                   false,
	`[,1]`:                   false,
	`{"a"}`:                  false,
	`{"a":}`:                 false,
	`{1:2}`:                  false,
	`tru`:                    false,
	`truex`:                  false,
	`[truex]`:                false,
	`-`:                      false,
	``:                       false,
	`"`:                      false,
	`[`:                      false,
	`{"a":[1,2`:              false,
	strings.Repeat("[", 16) + strings.Repeat("]", 16): true,
	strings.Repeat("[", 17) + strings.Repeat("]", 17): false, // deeper than Plain reads
}

func TestPlain(t *testing.T) {
	for in, want := range plainCases {
		if got := Plain([]byte(in)); got != want {
			t.Errorf("Plain(%q) = %v, want %v", in, got, want)
		}
		checkPlain(t, []byte(in))
	}
}

// checkPlain fails if Plain accepts b and either canonical form, or
// IsCanonical, disagrees.
func checkPlain(t *testing.T, b []byte) {
	t.Helper()
	if !Plain(b) {
		return
	}
	if c, err := JSON(b); err != nil || !bytes.Equal(c, b) {
		t.Fatalf("Plain(%q), but JSON gives %q (%v)", b, c, err)
	}
	if c, err := JCS(b); err != nil || !bytes.Equal(c, b) {
		t.Fatalf("Plain(%q), but JCS gives %q (%v)", b, c, err)
	}
	if !IsCanonical(b) {
		t.Fatalf("Plain(%q), but not IsCanonical", b)
	}
}

func TestPlainDoesNotAllocate(t *testing.T) {
	b := []byte(`{"a":1,"b":[true,null,"x<y&z"],"c":{"d":"é","e":-123456789012345}}`)
	if n := testing.AllocsPerRun(100, func() { Plain(b) }); n != 0 {
		t.Fatalf("Plain allocates %v times", n)
	}
}

// FuzzPlain: whatever Plain accepts, JSON and JCS leave as it is, and
// PlainMembers and PlainElements read as encoding/json does.
func FuzzPlain(f *testing.F) {
	for in := range plainCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkPlain(t, b)
		checkWalk(t, b)
		if c, err := JSON(b); err == nil {
			checkPlain(t, c)
			checkWalk(t, c)
		}
	})
}

// writeString's shortcut writes what encoding/json writes, for every
// ASCII character and the characters around the ones it escapes.
func TestWriteStringShortcutAgrees(t *testing.T) {
	cases := []string{"", "abc", "a<b>&c", "é", "\U0001F600", "\u2027", "\u2028", "\u2029", "\u202a", "\ufffd", "\xff", "a\xe2\x80"}
	for c := range 0x80 {
		cases = append(cases, string(rune(c)), "x"+string(rune(c))+"y")
	}
	for _, s := range cases {
		var fast, slow bytes.Buffer
		writeString(&fast, s)
		encodeString(&slow, s)
		if fast.String() != slow.String() {
			t.Errorf("writeString(%q) = %s, encoding/json %s", s, fast.String(), slow.String())
		}
	}
}

// PlainMembers and PlainElements see what encoding/json decodes.
func TestPlainMembersAndElements(t *testing.T) {
	for in := range plainCases {
		checkWalk(t, []byte(in))
	}
}

// checkWalk fails if PlainMembers or PlainElements refuses a plain
// object or array, or sees other members or elements than
// encoding/json decodes.
func checkWalk(t *testing.T, b []byte) {
	t.Helper()
	got := map[string]json.RawMessage{}
	if PlainMembers(b, func(k, v []byte) { got[string(k)] = v }) {
		var members map[string]json.RawMessage
		if err := json.Unmarshal(b, &members); err != nil || !reflect.DeepEqual(got, members) {
			t.Fatalf("PlainMembers(%s) = %q; encoding/json %q (%v)", b, got, members, err)
		}
	} else if Plain(b) && b[0] == '{' {
		t.Fatalf("PlainMembers(%s) refused a plain object", b)
	}
	var gotElems []json.RawMessage
	if PlainElements(b, func(v []byte) { gotElems = append(gotElems, v) }) {
		var elements []json.RawMessage
		if err := json.Unmarshal(b, &elements); err != nil || len(elements) != len(gotElems) ||
			(len(elements) > 0 && !reflect.DeepEqual(gotElems, elements)) {
			t.Fatalf("PlainElements(%s) = %q; encoding/json %q (%v)", b, gotElems, elements, err)
		}
	} else if Plain(b) && b[0] == '[' {
		t.Fatalf("PlainElements(%s) refused a plain array", b)
	}
}
