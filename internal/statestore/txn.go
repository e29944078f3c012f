package statestore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	memdb "github.com/hashicorp/go-memdb"
	"github.com/tidwall/btree"
)

// ErrNotFound is what Delete answers for a row that is not there: the
// same value go-memdb answers, so callers may compare with either.
var ErrNotFound = memdb.ErrNotFound

var errEnded = errors.New("statestore: the transaction has ended")

// Txn is a transaction: a consistent view of the state and, for a write
// transaction, the changes it has made so far, which no other
// transaction sees until Commit.
type Txn struct {
	db    *DB
	write bool
	ended bool
	root  *root
	// modified holds, per table position, this transaction's copies of
	// the table's trees, made on its first write to the table.
	modified [][]*tree
	// hints hold, per table position, where in the primary tree the last
	// lookup or write went. A create looks its row up, then inserts it:
	// with the hint the insert finds the path the lookup walked instead
	// of searching it again. A hint is only a guess: a wrong one costs a
	// search, never a wrong answer (btree.PathHint).
	hints []btree.PathHint
	// scratch holds a write transaction's FirstString key while it is
	// looked up.
	scratch []byte
	// claimed says this write transaction has claimed its root (see root)
	// on its first write; inPlace that nobody had read the root, so that
	// the root's private trees are changed in place. undo then records
	// each change, for Abort, up to maxUndo of them; past that the
	// transaction copies the trees it changed (forked), goes on in the
	// copies as a copying transaction does, and Abort undoes only the
	// recorded changes, which are all that the root's trees received.
	claimed, inPlace, forked bool
	undo                     []undo
}

// maxUndo bounds a write transaction's undo log: a restore's load of a
// million rows would otherwise record them all. A variable for the tests.
var maxUndo = 1 << 12

// undo is one recorded change to a tree: the key it wrote or deleted, and
// the entry that was there before, if any.
type undo struct {
	tree *tree
	key  string
	prev entry
	had  bool
}

// hint is table t's primary-tree hint.
func (txn *Txn) hint(t *table) *btree.PathHint {
	if txn.hints == nil {
		txn.hints = make([]btree.PathHint, len(txn.root.trees))
	}
	return &txn.hints[t.pos]
}

// Commit publishes a write transaction's changes at once and ends it. On
// a read transaction, or one that has ended, it does nothing.
func (txn *Txn) Commit() {
	if !txn.write || txn.ended {
		return
	}
	txn.ended = true
	if txn.modified != nil {
		next := txn.successor()
		for pos, trees := range txn.modified {
			if trees != nil {
				// The transaction's own copies, or private trees it
				// changed in place: no observed root holds either.
				next.trees[pos], next.private[pos] = trees, true
				next.changes[pos]++
			}
		}
		txn.publish(next)
	}
	txn.end()
}

// Abort drops a write transaction's changes and ends it. On a read
// transaction, or one that has ended, it does nothing.
func (txn *Txn) Abort() {
	if !txn.write || txn.ended {
		return
	}
	txn.ended = true
	if txn.claimed {
		for i := len(txn.undo) - 1; i >= 0; i-- {
			u := &txn.undo[i]
			if u.had {
				u.tree.Set(u.prev)
			} else {
				u.tree.Delete(entry{key: u.key})
			}
		}
		// Readers may be waiting on the claimed root: the same trees, as
		// they were, are published as the next one.
		txn.publish(txn.successor())
	}
	txn.end()
}

// successor is the next root as the claimed one left it: its trees, and
// private only where the claimed root was private and nobody read it.
func (txn *Txn) successor() *root {
	r := txn.root
	next := newRoot(slices.Clone(r.trees), make([]bool, len(r.trees)), slices.Clone(r.changes))
	if txn.inPlace {
		copy(next.private, r.private)
	}
	return next
}

// publish makes next the committed root, and releases the readers
// waiting on the one it replaces.
func (txn *Txn) publish(next *root) {
	txn.db.root.Store(next)
	close(txn.root.superseded)
}

// end releases the writer's lock, keeping the undo log's buffer (without
// what it held) for the next write transaction.
func (txn *Txn) end() {
	clear(txn.undo)
	txn.db.undo = txn.undo[:0]
	txn.undo, txn.modified = nil, nil
	if ownerCheck {
		txn.db.writerG.Store(0)
	}
	txn.db.writer.Unlock()
}

// claim claims the root on the transaction's first write, and finds
// whether its private trees may be changed in place: only if no reader
// has begun on it (see root).
func (txn *Txn) claim() {
	r := txn.root
	txn.claimed = true
	r.claimed.Store(true)
	if r.observed.Load() {
		// Copy, as ever. Readers may go on beginning on the root, which
		// nothing will change.
		r.claimed.Store(false)
		return
	}
	txn.inPlace = true
}

// tree is index i of t as this transaction sees it now.
func (txn *Txn) tree(t *table, i int) *tree {
	if txn.modified != nil && txn.modified[t.pos] != nil {
		return txn.modified[t.pos][i]
	}
	return txn.root.trees[t.pos][i]
}

// frozen is index i of t as of now, unaffected by this transaction's
// later writes: what an iterator walks.
func (txn *Txn) frozen(t *table, i int) *tree {
	if txn.write {
		// The tree may be changed in place later in this transaction,
		// the root's own included.
		return txn.tree(t, i).Copy()
	}
	// The trees of a root a read transaction has begun on never change.
	return txn.root.trees[t.pos][i]
}

// writable is the trees of t this transaction writes: the root's own, in
// place, where it may (see claim); else its copies of them.
func (txn *Txn) writable(t *table) []*tree {
	if !txn.claimed {
		txn.claim()
	}
	txn.forkIfFull()
	if txn.modified == nil {
		txn.modified = make([][]*tree, len(txn.root.trees))
	}
	if txn.modified[t.pos] == nil {
		if txn.inPlace && !txn.forked && txn.root.private[t.pos] {
			txn.modified[t.pos] = txn.root.trees[t.pos]
		} else {
			txn.modified[t.pos] = copyTrees(txn.root.trees[t.pos])
		}
	}
	return txn.modified[t.pos]
}

func copyTrees(trees []*tree) []*tree {
	own := make([]*tree, len(trees))
	for i, tr := range trees {
		own[i] = tr.Copy()
	}
	return own
}

// record logs a change to tr for Abort, while the transaction changes
// trees in place.
func (txn *Txn) record(tr *tree, key string, prev entry, had bool) {
	if !txn.inPlace || txn.forked {
		return
	}
	txn.undo = append(txn.undo, undo{tree: tr, key: key, prev: prev, had: had})
}

// forkIfFull forks once the undo log holds maxUndo changes: between
// writes, never within one, so that a write's changes all go to the
// trees it began on.
func (txn *Txn) forkIfFull() {
	if !txn.inPlace || txn.forked || len(txn.undo) < maxUndo {
		return
	}
	txn.forked = true
	for pos, trees := range txn.modified {
		if trees != nil {
			txn.modified[pos] = copyTrees(trees)
		}
	}
}

// set writes e into tr (with how: Set, SetHint or Load), recording the
// change.
func (txn *Txn) set(tr *tree, e entry, hint *btree.PathHint, how func(*tree, entry, *btree.PathHint) (entry, bool)) (entry, bool) {
	prev, replaced := how(tr, e, hint)
	txn.record(tr, e.key, prev, replaced)
	return prev, replaced
}

func setNoHint(tr *tree, e entry, _ *btree.PathHint) (entry, bool) { return tr.Set(e) }

// delete deletes key from tr, recording the change.
func (txn *Txn) delete(tr *tree, key string) (entry, bool) {
	prev, found := tr.Delete(entry{key: key})
	if found {
		txn.record(tr, key, prev, true)
	}
	return prev, found
}

// keysOf is obj's keys in every index of t, by index position, computed
// before anything is written so that a row an indexer refuses changes
// nothing. A missing value in an index that allows it gives no keys. A
// single-value index's key shares one allocation with the others'.
func (t *table) keysOf(obj any) (idKey string, keys [][]string, err error) {
	if idKey, err = t.primaryKey(obj); err != nil {
		return "", nil, err
	}
	keys = make([][]string, len(t.index))
	single := make([]string, len(t.index))
	for i := range t.index {
		ix := &t.index[i]
		switch indexer := ix.indexer.(type) {
		case memdb.SingleIndexer: // a Keyed index is one too
			val, ok := idKey, true
			if i != t.idPos {
				if val, ok, err = ix.keyOf(obj); err != nil {
					return "", nil, fmt.Errorf("failed to build index '%s': %v", ix.name, err)
				}
			}
			if ok {
				single[i] = ix.keyString(val, idKey)
				keys[i] = single[i : i+1 : i+1]
			} else if !ix.allowMissing {
				return "", nil, fmt.Errorf("missing value for index '%s'", ix.name)
			}
		case memdb.MultiIndexer:
			ok, vals, err := indexer.FromObject(obj)
			if err != nil {
				return "", nil, fmt.Errorf("failed to build index '%s': %v", ix.name, err)
			}
			if !ok {
				if !ix.allowMissing {
					return "", nil, fmt.Errorf("missing value for index '%s'", ix.name)
				}
				continue
			}
			keys[i] = make([]string, len(vals))
			for j, v := range vals {
				keys[i][j] = ix.key(v, idKey)
			}
		default:
			return "", nil, fmt.Errorf("index '%s': indexer is neither single nor multi", ix.name)
		}
	}
	return idKey, keys, nil
}

// primaryKey is obj's key in t's primary index.
func (t *table) primaryKey(obj any) (string, error) {
	idKey, ok, err := t.index[t.idPos].keyOf(obj)
	if err != nil {
		return "", fmt.Errorf("failed to build primary index: %v", err)
	}
	if !ok {
		return "", fmt.Errorf("object missing primary index")
	}
	return idKey, nil
}

// key is the tree key of an index value: the value itself in a unique
// index; followed by the row's primary key in a non-unique one, which
// makes it distinct, as in go-memdb.
func (ix *index) key(val []byte, idKey string) string {
	if ix.unique {
		return string(val)
	}
	return string(val) + idKey
}

// keyString is key for a value that is a string already (a Keyed
// index's), which a unique index uses as it is.
func (ix *index) keyString(val, idKey string) string {
	if ix.unique {
		return val
	}
	return val + idKey
}

// keyOf is obj's value in a single-value index, as a string: from a
// Keyed index without reflection, else (or for a row of another type
// than the Keyed index takes) from the go-memdb indexer, whose answer
// the Keyed one must equal.
func (ix *index) keyOf(obj any) (string, bool, error) {
	if k, ok := ix.indexer.(*Keyed); ok {
		if key, has, err := k.Key(obj); err == nil {
			return key, has, nil
		}
	}
	single, ok := ix.indexer.(memdb.SingleIndexer)
	if !ok {
		return "", false, fmt.Errorf("index '%s' is not a single-value index", ix.name)
	}
	has, val, err := single.FromObject(obj)
	return string(val), has, err
}

// writeTable is the table a write (an insert or a delete) names, if this
// transaction may still write.
func (txn *Txn) writeTable(table, write string) (*table, error) {
	if !txn.write {
		return nil, fmt.Errorf("cannot %s in read-only transaction", write)
	}
	if txn.ended {
		return nil, errEnded
	}
	return txn.db.table(table)
}

// Insert inserts obj into table, or replaces the row with its primary
// key. A row must not be changed after it is inserted: copy it, change
// the copy, insert the copy.
//
// The primary index is written first: its Set answers the row it
// replaces, so an insert walks that tree once, not once to look and once
// to write (a create's hottest path in the FSM).
func (txn *Txn) Insert(table string, obj any) error {
	return txn.insert(table, obj, (*tree).SetHint)
}

// Load is Insert for loading rows in ascending primary-key order, as a
// snapshot holds them: the primary tree appends each row to its last
// leaf without searching, where Insert binary-searches every level of
// the tree (a restore's hottest path). A row out of that order is
// inserted as Insert would, so the result never depends on the order;
// only the speed does. Meant for a new state: in a tree shared with a
// committed version, each Load also copies the tree's rightmost path the
// first time.
func (txn *Txn) Load(table string, obj any) error {
	return txn.insert(table, obj, loadIgnoringHint)
}

func loadIgnoringHint(tr *tree, e entry, _ *btree.PathHint) (entry, bool) { return tr.Load(e) }

// insert is Insert with set writing the primary tree: (*tree).SetHint,
// or loadIgnoringHint for rows in key order.
func (txn *Txn) insert(table string, obj any, set func(*tree, entry, *btree.PathHint) (entry, bool)) error {
	t, err := txn.writeTable(table, "insert")
	if err != nil {
		return err
	}
	if len(t.index) == 1 {
		// Only a primary index (most tables): its key is the whole write,
		// and no keys need collecting for other trees, nor deleting.
		idKey, err := t.primaryKey(obj)
		if err != nil {
			return err
		}
		txn.set(txn.writable(t)[0], entry{key: idKey, obj: obj}, txn.hint(t), set)
		return nil
	}
	idKey, keys, err := t.keysOf(obj)
	if err != nil {
		return err
	}
	trees := txn.writable(t)
	prev, replaced := txn.set(trees[t.idPos], entry{key: idKey, obj: obj}, txn.hint(t), set)
	if replaced {
		_, stale, err := t.keysOf(prev.obj)
		if err != nil {
			txn.set(trees[t.idPos], prev, nil, setNoHint) // the insert changes nothing
			return err
		}
		for i, tr := range trees {
			for _, k := range stale[i] {
				if i != t.idPos && !contains(keys[i], k) {
					txn.delete(tr, k)
				}
			}
		}
	}
	for i, tr := range trees {
		if i == t.idPos {
			continue
		}
		for _, k := range keys[i] {
			txn.set(tr, entry{key: k, obj: obj}, nil, setNoHint)
		}
	}
	return nil
}

func contains(keys []string, k string) bool {
	for _, have := range keys {
		if have == k {
			return true
		}
	}
	return false
}

// Delete deletes the row of table with obj's primary key, or answers
// ErrNotFound.
func (txn *Txn) Delete(table string, obj any) error {
	t, err := txn.writeTable(table, "delete")
	if err != nil {
		return err
	}
	idKey, err := t.primaryKey(obj)
	if err != nil {
		return err
	}
	if len(t.index) == 1 {
		if _, found := txn.delete(txn.writable(t)[0], idKey); !found {
			return ErrNotFound
		}
		return nil
	}
	existing, found := txn.tree(t, t.idPos).Get(entry{key: idKey})
	if !found {
		return ErrNotFound
	}
	_, keys, err := t.keysOf(existing.obj)
	if err != nil {
		return err
	}
	for i, tr := range txn.writable(t) {
		for _, k := range keys[i] {
			txn.delete(tr, k)
		}
	}
	return nil
}

// DeleteAll deletes every row Get(table, index, args...) finds and
// answers how many.
func (txn *Txn) DeleteAll(table, index string, args ...any) (int, error) {
	if !txn.write {
		return 0, fmt.Errorf("cannot delete in read-only transaction")
	}
	it, err := txn.Get(table, index, args...)
	if err != nil {
		return 0, err
	}
	var objs []any
	for obj := it.Next(); obj != nil; obj = it.Next() {
		objs = append(objs, obj)
	}
	for n, obj := range objs {
		if err := txn.Delete(table, obj); err != nil {
			return n, err
		}
	}
	return len(objs), nil
}

// lookup resolves an index name (with go-memdb's "_prefix" suffix for a
// prefix of the index's value) and arguments to the index's position and
// the key or key prefix to look for; "" with no arguments. exact says
// the key is a whole key of a unique index.
func (txn *Txn) lookup(table, index string, args []any) (t *table, pos int, key string, exact bool, err error) {
	t, err = txn.db.table(table)
	if err != nil {
		return nil, 0, "", false, err
	}
	name, prefixScan := strings.CutSuffix(index, "_prefix")
	pos, ok := t.byName[name]
	if !ok {
		return nil, 0, "", false, fmt.Errorf("invalid index '%s'", name)
	}
	ix := &t.index[pos]
	if len(args) == 0 {
		return t, pos, "", false, nil
	}
	if k, ok := ix.indexer.(*Keyed); ok && !prefixScan && k.Arg != nil {
		if key, ok := k.Arg(args); ok {
			return t, pos, key, ix.unique, nil
		}
	}
	var val []byte
	if prefixScan {
		p, ok := ix.indexer.(memdb.PrefixIndexer)
		if !ok {
			return nil, 0, "", false, fmt.Errorf("index '%s' does not support prefix scanning", name)
		}
		val, err = p.PrefixFromArgs(args...)
	} else {
		val, err = ix.indexer.FromArgs(args...)
	}
	if err != nil {
		return nil, 0, "", false, fmt.Errorf("index error: %v", err)
	}
	return t, pos, string(val), ix.unique && !prefixScan && val != nil, nil
}

// First is the first row the index gives for args: the row with that key
// in a unique index, else the first whose key begins with it. Nil if
// there is none.
func (txn *Txn) First(table, index string, args ...any) (any, error) {
	t, pos, key, exact, err := txn.lookup(table, index, args)
	if err != nil {
		return nil, err
	}
	tr := txn.tree(t, pos)
	if exact {
		if e, ok := tr.Get(entry{key: key}); ok {
			return e.obj, nil
		}
		return nil, nil
	}
	if key == "" {
		// The whole index (no arguments): its first row, without the
		// iterator's allocation (the ledger's pruning asks this of
		// every keyed write).
		if e, ok := tr.Min(); ok {
			return e.obj, nil
		}
		return nil, nil
	}
	it := tr.Iter()
	defer it.Release()
	if it.Seek(entry{key: key}) && strings.HasPrefix(it.Item().key, key) {
		return it.Item().obj, nil
	}
	return nil, nil
}

// FirstString is First(table, index, value) for a lookup by one string,
// the most common one (a node by its id): in a write transaction without
// the two allocations First makes for it (the argument as an interface,
// and the key), in a read transaction without the first. It answers what
// First answers.
func (txn *Txn) FirstString(table, index, value string) (any, error) {
	t, err := txn.db.table(table)
	if err != nil {
		return nil, err
	}
	pos, ok := t.byName[index]
	if !ok {
		return txn.First(table, index, value) // the same error, or a prefix scan
	}
	ix := &t.index[pos]
	k, ok := ix.indexer.(*Keyed)
	if !ok || !k.terminated || !ix.unique {
		return txn.First(table, index, value)
	}
	var key string
	var hint *btree.PathHint
	if txn.write {
		// A write transaction is its writer's alone (it holds the write
		// lock), so it may keep a scratch buffer and hints; a read
		// transaction changes nothing in itself, so that goroutines may
		// share one. The key lives only for this lookup: Get compares
		// with it and keeps nothing, so it may share scratch's bytes,
		// which the next lookup overwrites.
		txn.scratch = append(append(txn.scratch[:0], value...), 0)
		key = unsafe.String(unsafe.SliceData(txn.scratch), len(txn.scratch))
		if pos == t.idPos {
			hint = txn.hint(t)
		}
	} else {
		key = value + "\x00"
	}
	if e, found := txn.tree(t, pos).GetHint(entry{key: key}, hint); found {
		return e.obj, nil
	}
	return nil, nil
}

// Get iterates, in key order, the rows whose key in the index begins
// with the key args give (every row with no args).
func (txn *Txn) Get(table, index string, args ...any) (memdb.ResultIterator, error) {
	t, pos, key, _, err := txn.lookup(table, index, args)
	if err != nil {
		return nil, err
	}
	return newIterator(txn.frozen(t, pos), key, prefixed), nil
}

// LowerBound iterates, in key order, the rows whose key in the index is
// at least the key args give.
func (txn *Txn) LowerBound(table, index string, args ...any) (memdb.ResultIterator, error) {
	t, pos, key, _, err := txn.lookup(table, index, args)
	if err != nil {
		return nil, err
	}
	return newIterator(txn.frozen(t, pos), key, ascending), nil
}

// ReverseLowerBound iterates, in descending key order, the rows whose key
// in the index is at most the key args give.
func (txn *Txn) ReverseLowerBound(table, index string, args ...any) (memdb.ResultIterator, error) {
	t, pos, key, _, err := txn.lookup(table, index, args)
	if err != nil {
		return nil, err
	}
	return newIterator(txn.frozen(t, pos), key, descending), nil
}
