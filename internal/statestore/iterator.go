package statestore

import (
	"strings"

	"github.com/tidwall/btree"
)

// direction is how an iterator walks from its key.
type direction int

const (
	prefixed   direction = iota // ascending, while keys begin with the key
	ascending                   // ascending from the first key >= the key
	descending                  // descending from the last key <= the key
)

// iterator walks one frozen tree lazily: a page of a large table costs
// the page, not the table.
type iterator struct {
	it      btree.IterG[entry]
	key     string
	dir     direction
	started bool
	done    bool
}

func newIterator(tr *tree, key string, dir direction) *iterator {
	return &iterator{it: tr.Iter(), key: key, dir: dir}
}

// Next is the next row, or nil at the end.
func (i *iterator) Next() any {
	if i.done {
		return nil
	}
	ok := i.step()
	if ok && i.dir == prefixed && !strings.HasPrefix(i.it.Item().key, i.key) {
		ok = false
	}
	if !ok {
		i.done = true
		i.it.Release()
		return nil
	}
	return i.it.Item().obj
}

func (i *iterator) step() bool {
	if i.started {
		if i.dir == descending {
			return i.it.Prev()
		}
		return i.it.Next()
	}
	i.started = true
	found := i.it.Seek(entry{key: i.key})
	if i.dir != descending {
		return found
	}
	switch {
	case !found: // every key is below i.key, or there is none
		return i.it.Last()
	case i.it.Item().key == i.key:
		return true
	default:
		return i.it.Prev()
	}
}

// WatchCh is nil: this store has no watch channels.
func (i *iterator) WatchCh() <-chan struct{} { return nil }
