package fsm

import "github.com/arbiterhq/arbiter/internal/statestore"

// Retention keeps the idempotency ledger and the change feed bounded at
// any write rate. A tick only prunes a bounded page, so under heavy load
// pruning by ticks alone falls behind forever; instead, once a tick of
// version 2 has put the retention in the state, every command that adds
// to a table prunes it in the same transaction, in proportion to what it
// added:
//
//   - the change feed keeps its newest FeedRetain events: a command that
//     appends k events deletes at most k+1 of the oldest beyond that;
//   - the ledger keeps rows for IdemRetentionMs of FSM time: a command that
//     records a row deletes at most two rows older than that;
//   - the ledger holds at most LedgerMaxRows rows: beyond that, the oldest
//     rows are evicted before their retention runs out (counted in
//     LedgerEvicted, exported as arbiter_ledger_evictions_total). A retry
//     is therefore replayed for IdemRetentionMs or the last LedgerMaxRows
//     keyed writes, whichever is shorter; after that it runs again;
//   - from a tick of version 3, the ledger also holds at most
//     LedgerMaxBytes of rows (ledgerRowBytes): a row holds its command's
//     whole result, so rows alone do not bound its memory (250,000 rows
//     of a 128-item batch's answer would be tens of GB). A command that
//     records a row evicts the oldest while the ledger is over, at most
//     ledgerBytesEvictions of them; a tick evicts up to its budget.
//
// Ticks still prune a page each (the ledger expires by time while nothing
// is written), and the leader ticks again at once while a tick used its
// whole budget (a backlog left by a smaller retention or a larger cap).
type Retention struct {
	IdemRetentionMs int64  `msgpack:"idem_retention_ms"`
	FeedRetain      uint64 `msgpack:"feed_retain"`
	LedgerMaxRows   uint64 `msgpack:"ledger_max_rows"`
	// LedgerMaxBytes is 0 (no byte cap) until a tick of version 3.
	LedgerMaxBytes uint64 `msgpack:"ledger_max_bytes,omitempty"`
}

// Bounds on the ledger's row and byte caps.
const (
	MinLedgerRows  = 1024
	MaxLedgerRows  = 100_000_000
	MinLedgerBytes = 1 << 20
	MaxLedgerBytes = 1 << 40
)

// ledgerBytesEvictions bounds the rows one command evicts for the byte
// cap. Rows of about one size need one eviction a row; when large results
// follow small ones, a new row may need many of the oldest to go: at
// least 200 bytes a row, 1,024 of them free more than any one result
// holds, so the ledger stays within its cap plus one row (each eviction
// is a few microseconds, and only that shift pays for many).
const ledgerBytesEvictions = 1024

// keepUp prunes inside a command's transaction what the command's own
// additions pushed past the retention (see Retention).
func keepUp(txn *statestore.Txn, m *meta, eventsAdded int, ledgerAdded bool) {
	r := m.Retention
	if r == nil {
		return
	}
	if eventsAdded > 0 {
		pruneFeed(txn, m, r.FeedRetain, eventsAdded+1)
	}
	if ledgerAdded {
		pruneLedger(txn, m, m.Now-r.IdemRetentionMs, 2)
		if m.LedgerRows > r.LedgerMaxRows {
			over := m.LedgerRows - r.LedgerMaxRows
			m.LedgerEvicted += uint64(deleteOldest(txn, m, int(min(over, 2)), func(*idemRow) bool { return true }))
		}
		m.LedgerEvicted += uint64(evictForBytes(txn, m, r, ledgerBytesEvictions))
	}
}

// evictForBytes evicts the oldest rows while the ledger is over its
// byte cap (if it has one), at most budget of them, and returns how many.
func evictForBytes(txn *statestore.Txn, m *meta, r *Retention, budget int) int {
	if r.LedgerMaxBytes == 0 || m.LedgerBytes <= r.LedgerMaxBytes {
		return 0
	}
	return deleteOldest(txn, m, budget, func(*idemRow) bool { return m.LedgerBytes > r.LedgerMaxBytes })
}

// RetentionStats describes the ledger and the change feed, for metrics.
type RetentionStats struct {
	LedgerRows    uint64
	LedgerBytes   uint64
	LedgerEvicted uint64
	// LedgerOldestMs is the FSM time of the oldest ledger row (0 when
	// empty); FSMNow minus it is the ledger's age.
	LedgerOldestMs int64
	FeedRows       uint64
	FeedRetain     uint64 // 0 until a tick of version 2
	LedgerMaxBytes uint64 // 0 until a tick of version 3
	FSMNow         int64
}

// RetentionStats reads the local state's retention figures in O(1).
func (f *FSM) RetentionStats() RetentionStats {
	txn := f.db.Load().Txn(false)
	m := readMeta(txn)
	s := RetentionStats{LedgerRows: m.LedgerRows, LedgerBytes: m.LedgerBytes, LedgerEvicted: m.LedgerEvicted, FeedRows: m.LastSeq + 1 - m.FirstSeq, FSMNow: m.Now}
	if m.Retention != nil {
		s.FeedRetain, s.LedgerMaxBytes = m.Retention.FeedRetain, m.Retention.LedgerMaxBytes
	}
	if raw, err := txn.First(tableIdem, "created"); err == nil && raw != nil {
		s.LedgerOldestMs = raw.(*idemRow).CreatedAt
	}
	return s
}
