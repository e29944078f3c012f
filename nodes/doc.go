// Package nodes is the generic node primitives of the concept-reservation
// spec, the engine's native API, as a domain like the others:
// CreateNodeIfAbsent (Client.CreateIfAbsent), CompareAndSetNodeFields
// (Client.CompareAndSet), GetNodeProperties (Client.Get) and
// GetNodesByLabel (Client.ByLabel).
//
// A node is a create-once identity with labels and properties (canonical
// JSON). The first create of an id in log order wins; every later one reads
// the winner. A CAS checks every condition and applies every update in one
// log entry, so a holder of a stale fence can never overwrite a newer one.
// Time-aware fields (TimeFields) let a create or CAS write FSM time into
// fields and condition on deadlines judged by the log's clock; index
// fields (IndexFields, version 2) write the entry's log index, a fence that
// never goes backwards, also across a restored backup.
//
// The primitives know nothing of tenants: only an admin, or an in-server
// adapter the module lists (AcceptAdapters: domain/builtin lists the
// concept authority, which checks its caller first), may use them; the
// list is static module configuration, the same on every replica.
// Client is the typed API over any fsm.Proposer and fsm.Reader. A module
// built on them may apply a create or CAS inside a command of its own
// (Embed, then ApplyCreate, ApplyCAS; embed.go), so that a check of its
// own state and the node write are one log entry.
//
// Command and query types: the module declares 10-99 (fsm.Module.Types).
package nodes
