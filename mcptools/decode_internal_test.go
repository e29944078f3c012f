package mcptools

import (
	"encoding/json"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
)

// Integers beyond 2^53 (a fence, a sequence) reach the request exactly:
// the schema check reads numbers as float64, the decoding does not.
func TestDecodeKeepsLargeIntegers(t *testing.T) {
	type in struct {
		Fence uint64 `json:"fence"`
	}
	resolved, err := inferred[in]().Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decode[in](json.RawMessage(`{"fence": 9007199254740993}`), resolved)
	if err != nil || got.Fence != 9007199254740993 {
		t.Fatalf("decode: %d, %v", got.Fence, err)
	}
	_, err = decode[in](json.RawMessage(`{"fence": -1}`), resolved)
	if errs.CodeOf(err) != errs.CodeInvalid {
		t.Fatalf("a negative fence: %v", err)
	}
}
