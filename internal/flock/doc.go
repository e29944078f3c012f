// Package flock takes an exclusive advisory lock on a file (flock(2)),
// waiting a bounded time for another holder to let go. The projection
// writer locks its runtime root with it, and the log package locks a
// raft-wal directory so that a second process (an offline tool on a running
// node's directory) is refused instead of waiting forever.
//
// Locks belong to open file descriptions, so two opens in one process
// exclude each other as two processes do. Where flock does not exist (not
// unix) Acquire locks nothing and succeeds: one holder is then the
// operator's to ensure.
package flock
