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
	// writerG is the id of the goroutine that holds writer, in race
	// builds only (ownerCheck); 0 when none does.
	writerG atomic.Uint64
	// undo is the write transactions' undo log, kept between them so that
	// its buffer is allocated once (see Txn.undo).
	undo []undo
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
// per index (by position), a tree.
//
// A root that a read transaction has begun on (observed) never changes,
// nor do its trees. One that nobody has read may be claimed by a write
// transaction, which then changes the trees it may (private) in place
// instead of copying what it touches, and publishes the same trees as
// the next root. A reader that finds its root claimed waits until the
// next one is published (superseded) and reads that one. Each side sets
// its own flag before it reads the other's (both are sequentially
// consistent atomics), so at least one of them sees the other: either the
// writer sees the reader and copies, or the reader sees the claim and
// waits.
type root struct {
	trees [][]*tree
	// private says, per table, that no observed root holds its trees: a
	// writer may change them in place. A tree object shared with an
	// observed root must be copied (in constant time) first; nodes shared
	// with one are copied as they are touched in either case, because a
	// copied tree's nodes carry another copy's id (btree's isoid).
	private []bool
	// changes counts, per table, the commits that wrote to it: what
	// Changes answers.
	changes    []uint64
	observed   atomic.Bool
	claimed    atomic.Bool
	superseded chan struct{} // closed once the next root is published
}

func newRoot(trees [][]*tree, private []bool, changes []uint64) *root {
	return &root{trees: trees, private: private, changes: changes, superseded: make(chan struct{})}
}

// Changes is how many commits have written to table: a caller that keeps
// something it read from the table knows it is still current while this
// stays the same, without beginning a read transaction (which would make
// the next write copy what it changes: see root). -1 for a table the
// schema does not have.
func (db *DB) Changes(table string) int64 {
	t, ok := db.tables[table]
	if !ok {
		return -1
	}
	return int64(db.root.Load().changes[t.pos])
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
	r := newRoot(make([][]*tree, len(names)), make([]bool, len(names)), make([]uint64, len(names)))
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
		r.private[pos] = true
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
// the last committed state and needs no ending. It may wait for a write
// transaction that is changing that state's trees in place (at most until
// it ends); the goroutine that holds a write transaction must therefore
// not begin a read transaction before the write one ends.
//
// Race builds check the rule: a read transaction begun by the goroutine
// that holds the write transaction panics, naming the rule, where it
// would otherwise wait for itself forever once the write has claimed the
// state (or, before that, pass by luck).
func (db *DB) Txn(write bool) *Txn {
	if write {
		db.writer.Lock()
		if ownerCheck {
			db.writerG.Store(goroutineID())
		}
		return &Txn{db: db, write: true, root: db.root.Load(), undo: db.undo[:0]}
	}
	if ownerCheck {
		if g := db.writerG.Load(); g != 0 && g == goroutineID() {
			panic("statestore: a read transaction begun by the goroutine that holds the write transaction (it may wait for itself forever): end the write transaction first, or read through it")
		}
	}
	for {
		r := db.root.Load()
		if !r.observed.Load() {
			r.observed.Store(true)
		}
		if !r.claimed.Load() {
			return &Txn{db: db, root: r}
		}
		<-r.superseded
	}
}

func (db *DB) table(name string) (*table, error) {
	t, ok := db.tables[name]
	if !ok {
		return nil, fmt.Errorf("invalid table '%s'", name)
	}
	return t, nil
}
