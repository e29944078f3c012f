package strictjson

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
