package statestore

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/tidwall/btree"
)

// degree of every B-tree: nodes of up to 2*degree-1 = 31 entries. A write
// transaction copies the nodes on the path to what it changes, so smaller
// nodes make small transactions cheaper; larger ones make the tree
// shallower. Of 8, 16, 32 and 64, 16 and 32 applied raft-sized batches
// fastest (BenchmarkApplyBatch64) and 16 single commands.
const degree = 16

// entry is one row in one index: the index's key for the row and the row.
// A non-unique index's key ends with the row's primary key, as in
// go-memdb, so every key in a tree is distinct.
type entry struct {
	key string
	obj any
}

func less(a, b entry) bool { return a.key < b.key }

type tree = btree.BTreeG[entry]

func newTree() *tree {
	return btree.NewBTreeGOptions(less, btree.Options{Degree: degree, NoLocks: true})
}

// DB is a state store. Its schema is fixed when it is made.
type DB struct {
	tables map[string]*table
	root   atomic.Pointer[root]
	writer sync.Mutex // held by the one open write transaction
}

// table is a table's compiled schema.
type table struct {
	name   string
	pos    int     // position in root.trees
	index  []index // sorted by name; "id" is among them
	byName map[string]int
	idPos  int
}

type index struct {
	name         string
	unique       bool
	allowMissing bool
	indexer      memdb.Indexer
}

// root is one committed version of the state: per table (by position),
// per index (by position), a tree. A root and its trees are never
// changed once published.
type root struct {
	trees [][]*tree
}

// NewDB makes an empty store for schema, which must pass go-memdb's
// validation (every table has a unique "id" index with a single-value
// indexer).
func NewDB(schema *memdb.DBSchema) (*DB, error) {
	if err := schema.Validate(); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(schema.Tables))
	for name := range schema.Tables {
		names = append(names, name)
	}
	sort.Strings(names)
	db := &DB{tables: make(map[string]*table, len(names))}
	r := &root{trees: make([][]*tree, len(names))}
	for pos, name := range names {
		ts := schema.Tables[name]
		t := &table{name: name, pos: pos, byName: map[string]int{}}
		indexNames := make([]string, 0, len(ts.Indexes))
		for n := range ts.Indexes {
			indexNames = append(indexNames, n)
		}
		sort.Strings(indexNames)
		r.trees[pos] = make([]*tree, len(indexNames))
		for i, n := range indexNames {
			is := ts.Indexes[n]
			t.index = append(t.index, index{name: n, unique: is.Unique, allowMissing: is.AllowMissing, indexer: is.Indexer})
			t.byName[n] = i
			r.trees[pos][i] = newTree()
		}
		t.idPos = t.byName["id"]
		if _, ok := t.index[t.idPos].indexer.(memdb.SingleIndexer); !ok {
			return nil, fmt.Errorf("statestore: table %q: the id index must have a single-value indexer", name)
		}
		db.tables[name] = t
	}
	db.root.Store(r)
	return db, nil
}

// Txn begins a transaction. A write transaction waits for the previous
// one to end; it must end with Commit or Abort. A read transaction sees
// the last committed state and needs no ending.
func (db *DB) Txn(write bool) *Txn {
	if write {
		db.writer.Lock()
	}
	return &Txn{db: db, write: write, root: db.root.Load()}
}

func (db *DB) table(name string) (*table, error) {
	t, ok := db.tables[name]
	if !ok {
		return nil, fmt.Errorf("invalid table '%s'", name)
	}
	return t, nil
}
