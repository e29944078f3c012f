package statestore_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/arbiterhq/arbiter/internal/statestore"
	"github.com/google/go-cmp/cmp"
	memdb "github.com/hashicorp/go-memdb"
	"pgregory.net/rapid"
)

// row exercises every kind of index the FSM's modules use: a unique
// string id, a non-unique string, a non-unique number, a unique compound
// with prefix scans, a multi-value index and one that allows missing
// values.
type row struct {
	ID    string
	Group string
	N     uint64
	Tags  []string
	Opt   string
	C     int64
}

func schema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		"rows": {Name: "rows", Indexes: map[string]*memdb.IndexSchema{
			"id":    {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
			"group": {Name: "group", Indexer: &memdb.StringFieldIndex{Field: "Group"}},
			"n":     {Name: "n", Indexer: &memdb.UintFieldIndex{Field: "N"}},
			"c":     {Name: "c", Indexer: &memdb.IntFieldIndex{Field: "C"}},
			"gn": {Name: "gn", Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Group"}, &memdb.StringFieldIndex{Field: "ID"}}}},
			"tags": {Name: "tags", Indexer: &memdb.StringSliceFieldIndex{Field: "Tags"}, AllowMissing: true},
			"opt":  {Name: "opt", Indexer: &memdb.StringFieldIndex{Field: "Opt"}, AllowMissing: true},
		}},
		"other": {Name: "other", Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
		}},
	}}
}

// keyedSchema is schema with a statestore.Keyed indexer in place of every
// go-memdb indexer that has one: the store computes those keys without
// go-memdb, and must still agree with go-memdb run on schema().
func keyedSchema() *memdb.DBSchema {
	s := schema()
	ix := s.Tables["rows"].Indexes
	ix["id"].Indexer = statestore.StringField("ID", func(r *row) string { return r.ID })
	ix["group"].Indexer = statestore.StringField("Group", func(r *row) string { return r.Group })
	ix["n"].Indexer = statestore.Uint64Field("N", func(r *row) uint64 { return r.N })
	ix["c"].Indexer = statestore.Int64Field("C", func(r *row) int64 { return r.C })
	ix["gn"].Indexer = statestore.StringFields("Group", "ID", func(r *row) (string, string) { return r.Group, r.ID })
	ix["opt"].Indexer = statestore.StringField("Opt", func(r *row) string { return r.Opt })
	return s
}

// txn is what both stores' transactions answer.
type txn interface {
	Insert(table string, obj any) error
	Delete(table string, obj any) error
	DeleteAll(table, index string, args ...any) (int, error)
	First(table, index string, args ...any) (any, error)
	Get(table, index string, args ...any) (memdb.ResultIterator, error)
	LowerBound(table, index string, args ...any) (memdb.ResultIterator, error)
	ReverseLowerBound(table, index string, args ...any) (memdb.ResultIterator, error)
	Commit()
	Abort()
}

type pair struct{ model, store txn }

func ids(it memdb.ResultIterator, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var out []string
	for obj := it.Next(); obj != nil; obj = it.Next() {
		out = append(out, obj.(*row).ID)
	}
	return fmt.Sprint(out)
}

// rows is ids with each row's every field: for a table whose one index
// cannot tell a replaced row from the row it replaced.
func rows(it memdb.ResultIterator, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var out []string
	for obj := it.Next(); obj != nil; obj = it.Next() {
		out = append(out, fmt.Sprintf("%+v", *obj.(*row)))
	}
	return fmt.Sprint(out)
}

func one(obj any, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	if obj == nil {
		return "<nil>"
	}
	return obj.(*row).ID
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// query draws a read and runs it on both transactions.
func query(t *rapid.T, p pair) (string, string) {
	group := rapid.SampledFrom([]string{"", "a", "b", "ab"}).Draw(t, "group")
	id := rapid.SampledFrom([]string{"", "x", "x1", "y", "y2", "z"}).Draw(t, "id")
	n := rapid.Uint64Range(0, 5).Draw(t, "n")
	c := rapid.SampledFrom([]int64{math.MinInt64, -1, 0, 2}).Draw(t, "c")
	type q struct {
		index string
		args  []any
	}
	qs := []q{
		{"id", []any{id}}, {"id", nil}, {"id_prefix", []any{id}},
		{"group", []any{group}}, {"n", []any{n}}, {"gn", []any{group, id}},
		{"gn_prefix", []any{group}}, {"gn_prefix", []any{group, id}},
		{"tags", []any{id}}, {"opt", []any{group}}, {"nope", []any{id}},
		{"c", []any{c}}, {"c", nil},
	}
	kind := rapid.IntRange(0, 4).Draw(t, "kind")
	if kind == 4 {
		// FirstString by one string must answer what First answers, on
		// an index it looks up itself (a keyed unique one) or not.
		index := rapid.SampledFrom([]string{"id", "id_prefix", "group", "opt", "gn", "nope"}).Draw(t, "first string index")
		return one(p.model.First("rows", index, id)), one(p.store.(*statestore.Txn).FirstString("rows", index, id))
	}
	pick := rapid.SampledFrom(qs).Draw(t, "query")
	run := func(x txn) string {
		switch kind {
		case 0:
			return one(x.First("rows", pick.index, pick.args...))
		case 1:
			return ids(x.Get("rows", pick.index, pick.args...))
		case 2:
			return ids(x.LowerBound("rows", pick.index, pick.args...))
		default:
			return ids(x.ReverseLowerBound("rows", pick.index, pick.args...))
		}
	}
	return run(p.model), run(p.store)
}

func drawRow(t *rapid.T) *row {
	return &row{
		ID:    rapid.SampledFrom([]string{"x", "x1", "y", "y2", "z", "zz"}).Draw(t, "row id"),
		Group: rapid.SampledFrom([]string{"a", "b", "ab"}).Draw(t, "row group"),
		N:     rapid.Uint64Range(0, 5).Draw(t, "row n"),
		Tags:  rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"x", "y", "z"}), 0, 3, rapid.ID[string]).Draw(t, "row tags"),
		Opt:   rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "row opt"),
		C:     rapid.SampledFrom([]int64{math.MinInt64, -2, -1, 0, 1, 2, math.MaxInt64}).Draw(t, "row c"),
	}
}

// TestAgreesWithGoMemdb runs random transactions of inserts, deletes and
// reads against go-memdb and the store side by side: every answer, every
// error, what iterators made before later writes yield, and what a read
// transaction begun before a commit sees must agree. Read transactions
// begin before some write transactions only, and some are held across
// many: a write transaction changes in place what nobody reads, and must
// never change what a held one sees, nor leave a trace when it aborts.
// The undo log's bound is drawn small too, so that transactions fork.
func TestAgreesWithGoMemdb(t *testing.T) {
	t.Run("go-memdb indexers", func(t *testing.T) { agreesWithGoMemdb(t, schema()) })
	t.Run("keyed indexers", func(t *testing.T) { agreesWithGoMemdb(t, keyedSchema()) })
}

func agreesWithGoMemdb(t *testing.T, storeSchema *memdb.DBSchema) {
	rapid.Check(t, func(t *rapid.T) {
		model, err := memdb.NewMemDB(schema())
		if err != nil {
			t.Fatal(err)
		}
		store, err := statestore.NewDB(storeSchema)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what, want, got string) {
			if want != got {
				t.Fatalf("%s: go-memdb %s, statestore %s", what, want, got)
			}
		}
		defer statestore.SetMaxUndo(rapid.SampledFrom([]int{1, 3, 1 << 12}).Draw(t, "undo bound"))()
		var held []pair // read transactions held across write transactions
		for range rapid.IntRange(1, 12).Draw(t, "transactions") {
			if rapid.IntRange(0, 3).Draw(t, "hold a reader") == 0 {
				held = append(held, pair{model.Txn(false), store.Txn(false)})
			}
			readBefore := rapid.Bool().Draw(t, "read before")
			var before pair
			var beforeWant, beforeGot string
			if readBefore {
				before = pair{model.Txn(false), store.Txn(false)}
				beforeWant, beforeGot = ids(before.model.Get("rows", "id")), ids(before.store.Get("rows", "id"))
			}
			w := pair{model.Txn(true), store.Txn(true)}
			var open []pair // iterators made mid-transaction, drained at its end
			var openIters [][2]memdb.ResultIterator
			for range rapid.IntRange(0, 10).Draw(t, "steps") {
				switch rapid.IntRange(0, 7).Draw(t, "step") {
				case 0, 1:
					r := drawRow(t)
					check("insert", errText(w.model.Insert("rows", r)), errText(w.store.Insert("rows", r)))
				case 2:
					r := drawRow(t)
					check("delete", errText(w.model.Delete("rows", r)), errText(w.store.Delete("rows", r)))
				case 3:
					want, got := query(t, w)
					check("read in a write transaction", want, got)
				case 4:
					group := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "delete group")
					n1, err1 := w.model.DeleteAll("rows", "group", group)
					n2, err2 := w.store.DeleteAll("rows", "group", group)
					check("delete all", fmt.Sprint(n1, errText(err1)), fmt.Sprint(n2, errText(err2)))
				case 6, 7:
					// Load must give what Insert gives, in or out of key
					// order, on the multi-index table and a one-index one.
					table := map[bool]string{true: "rows", false: "other"}[rapid.Bool().Draw(t, "load table")]
					r := drawRow(t)
					check("load", errText(w.model.Insert(table, r)), errText(w.store.(*statestore.Txn).Load(table, r)))
				case 5:
					a, _ := w.model.Get("rows", "id")
					b, _ := w.store.Get("rows", "id")
					open = append(open, w)
					openIters = append(openIters, [2]memdb.ResultIterator{a, b})
				}
			}
			for _, its := range openIters {
				check("iterator made before later writes", ids(its[0], nil), ids(its[1], nil))
			}
			if rapid.Bool().Draw(t, "commit") {
				w.model.Commit()
				w.store.Commit()
			} else {
				w.model.Abort()
				w.store.Abort()
			}
			if readBefore {
				check("read transaction begun before the commit",
					beforeWant+" "+ids(before.model.Get("rows", "id")),
					beforeGot+" "+ids(before.store.Get("rows", "id")))
			}
			for _, h := range held {
				for _, index := range []string{"id", "group", "tags"} {
					check("held read transaction, index "+index, ids(h.model.Get("rows", index)), ids(h.store.Get("rows", index)))
				}
				check("held read transaction, table other", rows(h.model.Get("other", "id")), rows(h.store.Get("other", "id")))
			}
			r := pair{model.Txn(false), store.Txn(false)}
			want, got := query(t, r)
			check("read after the transaction", want, got)
			for _, index := range []string{"id", "group", "n", "c", "gn", "tags", "opt"} {
				check("whole index "+index, ids(r.model.Get("rows", index)), ids(r.store.Get("rows", index)))
			}
			check("whole table other", rows(r.model.Get("other", "id")), rows(r.store.Get("other", "id")))
		}
	})
}

// TestRefusedRowChangesNothing: a row an indexer refuses is an error and
// leaves every index as it was (go-memdb may have written some indexes
// by then; the FSM aborts such a transaction either way).
func TestRefusedRowChangesNothing(t *testing.T) {
	db, err := statestore.NewDB(schema())
	if err != nil {
		t.Fatal(err)
	}
	w := db.Txn(true)
	if err := w.Insert("rows", &row{ID: "x", Group: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Insert("rows", &row{ID: "x"}); err == nil {
		t.Fatal("a row with an empty group (a missing value in an index that does not allow it) was accepted")
	}
	if err := w.Insert("nope", &row{ID: "x"}); err == nil {
		t.Fatal("an insert into a table that does not exist was accepted")
	}
	w.Commit()
	r := db.Txn(false)
	for _, index := range []string{"id", "group", "gn"} {
		if got := ids(r.Get("rows", index)); got != "[x]" {
			t.Errorf("index %s holds %s after the refused insert, want [x]", index, got)
		}
	}
	got, _ := r.First("rows", "id", "x")
	if diff := cmp.Diff(&row{ID: "x", Group: "a"}, got); diff != "" {
		t.Errorf("row x after the refused insert (-want +got):\n%s", diff)
	}
}

// TestWritesAfterTheEndAreRefused: a transaction that has committed or
// aborted refuses further writes instead of changing published trees.
func TestWritesAfterTheEndAreRefused(t *testing.T) {
	db, err := statestore.NewDB(schema())
	if err != nil {
		t.Fatal(err)
	}
	w := db.Txn(true)
	w.Commit()
	if err := w.Insert("rows", &row{ID: "x", Group: "a"}); err == nil {
		t.Fatal("an insert after Commit was accepted")
	}
	w2 := db.Txn(true) // the writer lock was released
	w2.Abort()
	if err := w2.Delete("rows", &row{ID: "x"}); err == nil {
		t.Fatal("a delete after Abort was accepted")
	}
	if err := db.Txn(false).Insert("rows", &row{ID: "x", Group: "a"}); err == nil {
		t.Fatal("an insert in a read transaction was accepted")
	}
}
