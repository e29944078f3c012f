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

// TestFieldsAgreesWithCompoundIndexes: Fields' keys are go-memdb's for
// compounds of string, uint64 and int64 fields, on rows at the edges
// (empty strings, which leave a row out, zero bytes, extreme numbers);
// and its control: fields in another order than the indexer's, or a
// number of another sign rule, disagree.
func TestFieldsAgreesWithCompoundIndexes(t *testing.T) {
	compound := func(ix ...memdb.Indexer) memdb.Indexer { return &memdb.CompoundIndex{Indexes: ix} }
	str := func(f string) memdb.Indexer { return &memdb.StringFieldIndex{Field: f} }
	agree := map[string]*statestore.Keyed{
		"group-n-id": statestore.Fields(compound(str("Group"), &memdb.UintFieldIndex{Field: "N"}, str("ID")),
			func(r *row, k *statestore.Key) { k.String(r.Group); k.Uint64(r.N); k.String(r.ID) }),
		"c-id": statestore.Fields(compound(&memdb.IntFieldIndex{Field: "C"}, str("ID")),
			func(r *row, k *statestore.Key) { k.Int64(r.C); k.String(r.ID) }),
		"one": statestore.Fields(str("ID"), func(r *row, k *statestore.Key) { k.String(r.ID) }),
	}
	rows := []any{
		&row{}, &row{ID: "x"}, &row{Group: "a"}, &row{ID: "x\x00y", Group: "é", N: 1, C: -1},
		&row{ID: "z", Group: "g", N: math.MaxUint64, C: math.MinInt64}, &row{ID: "z", Group: "g", C: math.MaxInt64},
	}
	for name, k := range agree {
		table := &memdb.TableSchema{Name: "t", Indexes: map[string]*memdb.IndexSchema{"id": {Name: "id", Unique: true, Indexer: k}}}
		if err := statestore.VerifyKeys(table, rows...); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	disagree := map[string]*statestore.Keyed{
		"order": statestore.Fields(compound(str("Group"), str("ID")),
			func(r *row, k *statestore.Key) { k.String(r.ID); k.String(r.Group) }),
		"sign": statestore.Fields(compound(&memdb.IntFieldIndex{Field: "C"}),
			func(r *row, k *statestore.Key) { k.Uint64(uint64(r.C)) }),
	}
	for name, k := range disagree {
		table := &memdb.TableSchema{Name: "t", Indexes: map[string]*memdb.IndexSchema{"id": {Name: "id", Unique: true, Indexer: k}}}
		if err := statestore.VerifyKeys(table, &row{ID: "x", Group: "a", C: 3}); err == nil {
			t.Errorf("%s: a keyer that disagrees passes", name)
		}
	}
}
