package fsm

import (
	"encoding/json"

	"github.com/arbiterhq/arbiter/internal/statestore"
	memdb "github.com/hashicorp/go-memdb"
)

// Core table names. Module tables must not reuse them.
const (
	tableMeta    = "meta"
	tableIdem    = "idempotency"
	tableChanges = "changes"
	tableMembers = "members"
)

// meta is the single row of FSM bookkeeping, kept in the store so that a
// snapshot's read transaction sees index, clock and sequences consistently.
type meta struct {
	ID       string `msgpack:"id"` // always "meta"
	Index    uint64 `msgpack:"index"`
	Now      int64  `msgpack:"now"`
	LastSeq  uint64 `msgpack:"last_seq"`  // newest change-feed sequence
	FirstSeq uint64 `msgpack:"first_seq"` // oldest retained sequence (LastSeq+1 when empty)
	// Enabled is the cluster's enabled command set; nil until the first
	// CmdEnable (ungated: see Capabilities). Replaced, never changed in
	// place: batches share the pointer.
	Enabled *Capabilities `msgpack:"enabled,omitempty"`
	// Retention is what the last tick of version 2 said to keep (nil
	// before one): commands then prune in proportion to what they add
	// (see keepUp).
	Retention *Retention `msgpack:"retention,omitempty"`
	// LedgerRows counts the idempotency ledger's rows; LedgerEvicted the
	// rows evicted by its row or byte cap before their retention ran out;
	// LedgerBytes is the rows' size (ledgerRowBytes, summed) while a byte
	// cap is in force (countsLedgerBytes), else 0: a state that never
	// had one is the state it was before the cap existed.
	LedgerRows    uint64 `msgpack:"ledger_rows,omitempty"`
	LedgerEvicted uint64 `msgpack:"ledger_evicted,omitempty"`
	LedgerBytes   uint64 `msgpack:"ledger_bytes,omitempty"`
	// ClusterID names the cluster ("" until CmdClusterID; see there).
	ClusterID string `msgpack:"cluster_id,omitempty"`
}

// idemRow is one entry of the idempotency ledger.
type idemRow struct {
	ID        string   `msgpack:"id"` // see ledgerID
	Principal string   `msgpack:"principal"`
	Scope     string   `msgpack:"scope"`
	Key       string   `msgpack:"key"`
	Digest    [32]byte `msgpack:"digest"`
	Response  Response `msgpack:"response"`
	CreatedAt int64    `msgpack:"created_at"`
}

// Event is one committed change, in the change feed.
type Event struct {
	Seq    uint64 `msgpack:"seq" json:"seq"`
	Index  uint64 `msgpack:"index" json:"index"`
	Time   int64  `msgpack:"time" json:"time_ms"`
	Kind   string `msgpack:"kind" json:"kind"`
	Key    string `msgpack:"key" json:"key"`
	Tenant string `msgpack:"tenant,omitempty" json:"tenant,omitempty"`
	// Payload, if set, is a JSON object the module attached (an outbox
	// message: see Tx.EmitPayload).
	Payload json.RawMessage `msgpack:"payload,omitempty" json:"payload,omitempty"`
	// Value is what the event wrote, on a page read with values
	// (ChangesRequest.Values) for an event whose module gives values;
	// Overwritten says a later change has since replaced it (read that
	// change's event). Neither is ever stored: the feed keeps keys only.
	Value       json.RawMessage `msgpack:"value,omitempty" json:"value,omitempty"`
	Overwritten bool            `msgpack:"overwritten,omitempty" json:"overwritten,omitempty"`
}

// Member is the replicated metadata of one cluster member.
type Member struct {
	ID       string `msgpack:"id" json:"id"`
	RaftAddr string `msgpack:"raft_addr" json:"raft_addr"`
	APIAddr  string `msgpack:"api_addr" json:"api_addr"`
	// Serves is what the member's binary serves, as it last said.
	Serves Capabilities `msgpack:"serves" json:"serves"`
}

// Same reports whether m and o say the same thing.
func (m Member) Same(o Member) bool {
	return m.ID == o.ID && m.RaftAddr == o.RaftAddr && m.APIAddr == o.APIAddr && m.Serves.Equal(o.Serves)
}

// coreModuleName names the core module, whose commands and queries every
// replica serves.
const coreModuleName = "core"

func coreModule() Module {
	return Module{
		Name: coreModuleName,
		// The core owns 1-9 (ticks, members, enable, cluster id).
		Types: TypeRange{First: 1, Last: 9},
		Tables: []Table{
			{New: func() any { return new(meta) }, Schema: &memdb.TableSchema{
				Name: tableMeta,
				Indexes: map[string]*memdb.IndexSchema{
					"id": {Name: "id", Unique: true, Indexer: statestore.StringField("ID", func(m *meta) string { return m.ID })},
				},
			}},
			{New: func() any { return new(idemRow) }, Schema: &memdb.TableSchema{
				Name: tableIdem,
				Indexes: map[string]*memdb.IndexSchema{
					"id":      {Name: "id", Unique: true, Indexer: statestore.StringField("ID", func(r *idemRow) string { return r.ID })},
					"created": {Name: "created", Indexer: statestore.Int64Field("CreatedAt", func(r *idemRow) int64 { return r.CreatedAt })},
				},
			}},
			{New: func() any { return new(Event) }, Schema: &memdb.TableSchema{
				Name: tableChanges,
				Indexes: map[string]*memdb.IndexSchema{
					"id": {Name: "id", Unique: true, Indexer: statestore.Uint64Field("Seq", func(e *Event) uint64 { return e.Seq })},
				},
			}},
			{New: func() any { return new(Member) }, Schema: &memdb.TableSchema{
				Name: tableMembers,
				Indexes: map[string]*memdb.IndexSchema{
					"id": {Name: "id", Unique: true, Indexer: statestore.StringField("ID", func(m *Member) string { return m.ID })},
				},
			}},
		},
		Commands: []CommandSpec{tickSpec(), memberUpsertSpec(), memberRemoveSpec(), enableSpec(), clusterIDSpec()},
		Queries:  []QuerySpec{membersQuerySpec(), changesQuerySpec(nil)},
	}
}
