package statestore_test

import (
	"math"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/internal/statestore"
	memdb "github.com/hashicorp/go-memdb"
	"pgregory.net/rapid"
)

func TestVerifyKeysAcceptsKeyersThatAgree(t *testing.T) {
	rows := []any{
		&row{}, &row{ID: "x", Group: "a"}, &row{ID: "x\x00y", Group: "é"},
		&row{ID: "z", N: math.MaxUint64, C: math.MinInt64}, &row{ID: "z", C: math.MaxInt64}, &row{C: -1},
	}
	if err := statestore.VerifyKeys(keyedSchema().Tables["rows"], rows...); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyKeysCatchesAKeyerThatDisagrees is VerifyKeys' control: an
// accessor that reads another field than the indexer names.
func TestVerifyKeysCatchesAKeyerThatDisagrees(t *testing.T) {
	for name, indexer := range map[string]*statestore.Keyed{
		"string":  statestore.StringField("ID", func(r *row) string { return r.Group }),
		"strings": statestore.StringFields("Group", "ID", func(r *row) (string, string) { return r.ID, r.Group }),
		"uint64":  statestore.Uint64Field("N", func(r *row) uint64 { return r.N + 1 }),
		"int64":   statestore.Int64Field("C", func(r *row) int64 { return -r.C }),
	} {
		table := &memdb.TableSchema{Name: "t", Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: indexer},
		}}
		err := statestore.VerifyKeys(table, &row{ID: "x", Group: "a", N: 1, C: 3})
		if err == nil || !strings.Contains(err.Error(), "Key gives") {
			t.Errorf("%s: a keyer that disagrees passes: %v", name, err)
		}
	}
}

// TestStringFieldArgIsFromArgs: the lookup key StringField builds
// without go-memdb is FromArgs' for every single string, and it declines
// every other form of arguments, which FromArgs then answers (refuses).
func TestStringFieldArgIsFromArgs(t *testing.T) {
	k := statestore.StringField("ID", func(r *row) string { return r.ID })
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		key, ok := k.Arg([]any{s})
		want, err := k.FromArgs(s)
		if !ok || err != nil || key != string(want) {
			t.Fatalf("Arg(%q) = %q, %t; FromArgs = %q, %v", s, key, ok, want, err)
		}
	})
	for _, args := range [][]any{{}, {"a", "b"}, {1}, {[]byte("a")}, {nil}} {
		if key, ok := k.Arg(args); ok {
			t.Errorf("Arg(%#v) = %q: FromArgs refuses these arguments", args, key)
		}
		if _, err := k.FromArgs(args...); err == nil {
			t.Errorf("FromArgs(%#v) accepts what Arg declines", args)
		}
	}
}
