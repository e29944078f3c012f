// Package store is where the replicated log lives on disk: the raft log
// and stable stores and the snapshot store of a data directory. Only the
// host (package cluster and offline tools) imports it; what goes into the
// log is package log.
//
// Open opens the raft log and stable store (hashicorp/raft-wal,
// the default for a new data directory, or raft-boltdb/v2, each behind a
// raft.LogCache; a directory keeps the kind it was created with) and the
// file snapshot store (whose Open leaves the check of a snapshot's bytes
// to the FSM's restore instead of reading the whole file for its CRC
// first: snapshot_open.go), with fsync on unless the caller explicitly asks for
// the unsafe no-sync mode. A directory in use by another opener is refused
// after a second on either kind (bolt's own open timeout; for the WAL, the
// lock file wal.lock), so an offline tool pointed at a running node's
// directory says so instead of waiting.
package store
