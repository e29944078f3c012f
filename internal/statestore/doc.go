// Package statestore is the FSM's in-memory state store: tables of rows,
// each reachable through the indexes of a go-memdb schema, kept in
// copy-on-write B-trees (github.com/tidwall/btree).
//
// It answers go-memdb's transaction API (First, Get, LowerBound,
// ReverseLowerBound, Insert, Delete, DeleteAll, Commit, Abort) with
// go-memdb's semantics, and takes go-memdb's schemas and indexers as they
// are, so modules describe their tables exactly as before. Two additions
// serve the FSM's hot paths: FirstString (First by one string, without
// allocating) and Load (Insert for rows that come in key order). What differs
// is the structure underneath. go-memdb keeps every index in an immutable
// radix tree whose every node and leaf carries its own watch channel:
// about 870 bytes per row of a table with two indexes, half of the state's
// memory. A B-tree node holds up to 31 rows of an index inline, as a key
// and a pointer, and shares unchanged nodes between versions, so a row
// costs its key bytes and a few words per index.
//
// Isolation is go-memdb's: one write transaction at a time (Txn(true)
// blocks until the previous one ends); readers see the state as of the
// last commit when they began; an iterator sees the index as of the
// moment it was made, even inside a write transaction that goes on
// writing. Watch channels are not supported: WatchCh returns nil.
//
// What a reader may see is never changed: a write transaction copies the
// committed tree of an index the first time it writes to it (in constant
// time; the nodes it then touches are copied as it goes), and Commit
// publishes the new trees at once. What nobody has read since the last
// commit is changed in place instead (the copies were most of a create's
// allocations with ids spread over the tree), with an undo log for Abort.
// A reader that begins meanwhile waits for that write transaction to end,
// so the goroutine holding a write transaction must not begin a read one.
// Changes counts a table's commits, for callers that keep what they read
// of a table without reading it again (the FSM's members). Len,
// CountPrefix and CountBelow count rows from the trees' node counts
// without visiting them (O(log² n)), for gauges read at scrape time.
package statestore
