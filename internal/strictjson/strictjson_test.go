package strictjson

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

type cell struct {
	CellID     string            `json:"cell_id"`
	Capacities map[string]uint64 `json:"capacities"`
}

type embedded struct {
	Due []string `json:"due,omitempty"`
}

type request struct {
	NodeID     string         `json:"node_id"`
	Labels     []string       `json:"labels"`
	Properties map[string]any `json:"properties"`
	Cell       *cell          `json:"cell"`
	Cells      []cell         `json:"cells"`
	Fence      uint64         `json:"fence"`
	Offset     int64          `json:"offset"`
	Flag       bool           `json:"flag"`
	embedded
}

func TestDuplicateKeysAreRefusedAtAnyDepth(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"node_id":"a","node_id":"b"}`, `duplicate key "node_id"`},
		{`{"node_id":"a","node\u005fid":"b"}`, `duplicate key "node_id"`},
		{`{"properties":{"x":1,"y":{"z":1,"z":2}}}`, `duplicate key "z" in properties.y`},
		{`{"cells":[{"cell_id":"a"},{"cell_id":"b","cell_id":"c"}]}`, `duplicate key "cell_id" in cells[1]`},
		{`{"properties":{"a":[{"k":1},{"k":1,"k":1}]}}`, `duplicate key "k" in properties.a[1]`},
	} {
		var r request
		err := Decode([]byte(tc.body), &r)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q", tc.body, err, tc.want)
		}
	}
	// The same key in sibling objects, and keys that only look alike,
	// are fine.
	for _, body := range []string{
		`{"cells":[{"cell_id":"a"},{"cell_id":"b"}],"properties":{"cell_id":1,"a":{"cell_id":2}}}`,
		`{"properties":{"a":1,"A":2,"a ":3}}`,
		`{"properties":{"deep":[[[{"a":1}],{"a":2}]]}}`,
	} {
		var r request
		if err := Decode([]byte(body), &r); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestDuplicateKeysInAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(path, []byte(`[{"cell_id":"a","capacities":{"gpu":1,"gpu":2}}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	var cells []cell
	err := DecodeFile(path, &cells)
	if err == nil || !strings.Contains(err.Error(), `duplicate key "gpu" in [0].capacities`) || !strings.Contains(err.Error(), path) {
		t.Fatalf("got %v", err)
	}
}

func TestTypeErrorsSpeakJSON(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"labels":"a"}`, "labels: want an array of strings, got a string"},
		{`{"labels":[1]}`, "labels: want an array of strings, got a number inside it"},
		{`{"node_id":7}`, "node_id: want a string, got a number"},
		{`{"fence":-1}`, "fence: want a non-negative integer, got the number -1"},
		{`{"fence":1.5}`, "fence: want a non-negative integer, got the number 1.5"},
		{`{"offset":"3"}`, "offset: want an integer, got a string"},
		{`{"flag":"yes"}`, "flag: want true or false, got a string"},
		{`{"properties":[]}`, "properties: want an object of JSON values, got an array"},
		{`{"cell":[]}`, "cell: want an object, got an array"},
		{`{"cell":{"capacities":{"gpu":"x"}}}`, "cell.capacities: want an object of non-negative integers, got a string inside it"},
		{`{"cells":[{"capacities":[]}]}`, "cells.capacities: want an object of non-negative integers, got an array"},
		{`{"due":"x"}`, "due: want an array of strings, got a string"},
		{`[]`, "the body must be an object, not an array"},
		{`{"labelz":[]}`, `unknown field "labelz"`},
		{`{"node_id":"a"`, "the JSON value is incomplete"},
		{`{"node_id":x}`, "invalid JSON at byte 12: invalid character 'x' looking for beginning of value"},
		{`{} {}`, "data after the value"},
	} {
		var r request
		err := Decode([]byte(tc.body), &r)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q", tc.body, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "[]string") || strings.Contains(err.Error(), "request")) {
			t.Errorf("%s: the error names Go types: %v", tc.body, err)
		}
	}
}

func TestNumbersKeepTheirLiterals(t *testing.T) {
	var r request
	if err := Decode([]byte(`{"properties":{"n":123456789012345678901234567890,"f":1.10}}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.Properties["n"] != json.Number("123456789012345678901234567890") || r.Properties["f"] != json.Number("1.10") {
		t.Fatalf("%#v", r.Properties)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"node_id":"a","properties":{"x":[1,{"y":2}]}}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`[[[[`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var r request
		_ = Decode(raw, &r) // never panics
		var v any
		if Decode(raw, &v) == nil {
			// What decodes has no duplicate key: re-encoding keeps every key.
			if _, err := json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzDuplicateKeysAgree holds the byte scanner (duplicates.go) to the
// token walk it replaced: on every valid JSON value, the same answer, down
// to the error's words. (Invalid UTF-8 is refused before the check; the
// token walk would have compared its keys as U+FFFD.)
func FuzzDuplicateKeysAgree(f *testing.F) {
	f.Add([]byte(`{"node_id":"a","node\u005fid":"b"}`))
	f.Add([]byte(`{"cells":[{"cell_id":"a"},{"cell_id":"b","cell_id":"c"}]}`))
	f.Add([]byte(`{"properties":{"a":[{"k":1},{"k":1,"k":1}]}}`))
	f.Add([]byte(`[1,"x",{"a":{"b":[true,null,{"c":1,"c":2}]}}]`))
	f.Add([]byte(`{"a\"b":1,"a\\"b":2,"a\u0022b":3}`))
	many := `{"k0":0`
	for i := 1; i < 40; i++ {
		many += `,"k` + strconv.Itoa(i) + `":{"x":` + strconv.Itoa(i) + `}`
	}
	f.Add([]byte(many + `,"k17":1}`))
	f.Add([]byte(many + `,"k39 ":1}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || !utf8.Valid(raw) {
			return // Decode refuses both before the check
		}
		got, want := checkDuplicateKeys(raw), checkDuplicateKeysByTokens(raw)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q: scanner says %v, token walk says %v", raw, got, want)
		}
	})
}

// TestDuplicateKeysPastTheLinearLimit: an object of many keys indexes them
// in a map from its 17th key on; a repeat of an early key and of a late
// one are both caught, at any depth, and the scanner's fixed arrays spill
// to the heap without losing anything.
func TestDuplicateKeysPastTheLinearLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"properties":{`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":{"d":[[[[[[[[[[[[[[[[[[{"x":%d}]]]]]]]]]]]]]]]]]]}`, i, i)
	}
	base := b.String()
	for _, tc := range []struct{ tail, want string }{
		{`}}`, ""},
		{`,"k3":1}}`, `duplicate key "k3" in properties`},
		{`,"k99":1}}`, `duplicate key "k99" in properties`},
		{`,"k\u0035\u0030":1}}`, `duplicate key "k50" in properties`},
	} {
		var v any
		got := ""
		if err := Decode([]byte(base+tc.tail), &v); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("tail %s: got %q, want %q", tc.tail, got, tc.want)
		}
	}
}

// TestDuplicateCheckOfARequestAllocatesNothing guards the point of the
// scanner: a create body's duplicate check allocates nothing.
func TestDuplicateCheckOfARequestAllocatesNothing(t *testing.T) {
	body := []byte(`{"node_id":"RMDD-27","labels":["concept"],"properties":{"owner":"host-a","fence":1,"tags":["a","b"]}}`)
	if n := testing.AllocsPerRun(100, func() {
		if checkDuplicateKeys(body) != nil {
			t.Fatal("refused")
		}
	}); n != 0 {
		t.Fatalf("%v allocations a check, want 0", n)
	}
}
