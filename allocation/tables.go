package allocation

import (
	"fmt"

	"github.com/arbiterhq/arbiter/fsm"
	memdb "github.com/hashicorp/go-memdb"
)

const (
	tableSpaces       = "allocation_spaces"
	tableTasks        = "allocation_tasks"
	tableNotes        = "allocation_notes"
	tableOccupancy    = "allocation_occupancy"
	tableReservations = "allocation_reservations"
	tableExpiry       = "allocation_reservation_expiry"
	tableIdem         = "allocation_idempotency"
	tableDuplicates   = "allocation_duplicates"
)

// spaceRow is a space with what the FSM derives from it: each catalog
// row's bag (sorted tokens of its canonical title and aliases, computed
// once when the space is put) and the next task and note ids.
type spaceRow struct {
	Slug       string     `msgpack:"slug"`
	Space      Space      `msgpack:"space"`
	Bags       [][]string `msgpack:"bags"`
	NextTaskID uint64     `msgpack:"next_task_id"`
	NextNoteID uint64     `msgpack:"next_note_id"`
}

// occupancyRow holds one conflict key: a live task, a note, a live
// reservation (WinnerType reserved_intent, until ExpiresAtMs) or the
// external object a reservation was committed to. The table's unique
// index on (space, kind, target, delivery_mode) is what makes a key's
// occupant unique.
type occupancyRow struct {
	Space        string   `msgpack:"space"`
	Kind         string   `msgpack:"kind"`
	Target       string   `msgpack:"target"`
	DeliveryMode string   `msgpack:"delivery_mode"`
	WinnerType   string   `msgpack:"winner_type"`
	WinnerID     WinnerID `msgpack:"winner_id"`
	ProposalID   string   `msgpack:"proposal_id"`
	ExpiresAtMs  int64    `msgpack:"expires_at_ms"`
}

func (o *occupancyRow) key() ConflictKey {
	return ConflictKey{Kind: o.Kind, Target: o.Target, DeliveryMode: o.DeliveryMode}
}

// live reports whether the row holds its key at now: always, except a
// reservation from its expiry on (Tick drops it later).
func (o *occupancyRow) live(now int64) bool {
	return o.WinnerType != WinnerReservedIntent || now < o.ExpiresAtMs
}

// reservationRow is a reservation of an external host's proposal.
type reservationRow struct {
	Space        string  `msgpack:"space"`
	ProposalID   string  `msgpack:"proposal_id"`
	Kind         string  `msgpack:"kind"`
	Target       string  `msgpack:"target"`
	DeliveryMode string  `msgpack:"delivery_mode"`
	WorkItemID   *string `msgpack:"work_item_id"`
	Principal    string  `msgpack:"principal"`
	State        string  `msgpack:"state"`
	ExpiresAtMs  int64   `msgpack:"expires_at_ms"`
	Winner       *Winner `msgpack:"winner"`
	Digest       string  `msgpack:"digest"` // of the request, for an idempotent retry
	CreatedAtMs  int64   `msgpack:"created_at_ms"`
}

func (r *reservationRow) key() ConflictKey {
	return ConflictKey{Kind: r.Kind, Target: r.Target, DeliveryMode: r.DeliveryMode}
}

func (r *reservationRow) view() Reservation {
	return Reservation{ProposalID: r.ProposalID, ConflictKey: r.key(), ExpiresAtMs: r.ExpiresAtMs, WorkItemID: r.WorkItemID,
		Principal: r.Principal, State: r.State, Winner: r.Winner}
}

// expiryRow indexes a live reservation by its expiry, for Tick.
type expiryRow struct {
	AtMs       int64  `msgpack:"at_ms"`
	Space      string `msgpack:"space"`
	ProposalID string `msgpack:"proposal_id"`
}

// idemRow binds an Idempotency-Key of a principal in a space to the task
// or note its first request created. Rows live as long as what they name
// (tasks and notes are never deleted).
type idemRow struct {
	ID     string `msgpack:"id"` // idemID(space, scope, principal, key)
	Digest string `msgpack:"digest"`
	Ref    uint64 `msgpack:"ref"`
}

// Idempotency scopes.
const (
	scopeTask = "task"
	scopeNote = "note"
)

func idemID(space, scope, principal, key string) string {
	return fmt.Sprintf("%d:%s|%d:%s|%d:%s|%d:%s", len(space), space, len(scope), scope, len(principal), principal, len(key), key)
}

func str(field string) memdb.Indexer { return &memdb.StringFieldIndex{Field: field} }
func num(field string) memdb.Indexer { return &memdb.UintFieldIndex{Field: field} }
func compound(ix ...memdb.Indexer) memdb.Indexer {
	return &memdb.CompoundIndex{Indexes: ix}
}

func tables() []fsm.Table {
	id := func(ix memdb.Indexer) map[string]*memdb.IndexSchema {
		return map[string]*memdb.IndexSchema{"id": {Name: "id", Unique: true, Indexer: ix}}
	}
	taskIx := id(compound(str("Space"), num("ID")))
	taskIx["status"] = &memdb.IndexSchema{Name: "status", Unique: true, Indexer: compound(str("Space"), str("Status"), num("ID"))}
	noteIx := id(compound(str("Space"), num("ID")))
	dupIx := id(compound(str("Space"), num("TaskID")))
	dupIx["key"] = &memdb.IndexSchema{Name: "key", Unique: true, Indexer: compound(str("Space"), str("Kind"), str("Target"), str("DeliveryMode"), num("TaskID"))}
	noteIx["task"] = &memdb.IndexSchema{Name: "task", Unique: true, Indexer: compound(str("Space"), num("TaskID"), num("ID"))}
	return []fsm.Table{
		{New: func() any { return new(spaceRow) }, Schema: &memdb.TableSchema{Name: tableSpaces, Indexes: id(str("Slug"))}},
		{New: func() any { return new(Task) }, Schema: &memdb.TableSchema{Name: tableTasks, Indexes: taskIx}},
		{New: func() any { return new(Note) }, Schema: &memdb.TableSchema{Name: tableNotes, Indexes: noteIx}},
		{New: func() any { return new(occupancyRow) }, Schema: &memdb.TableSchema{Name: tableOccupancy,
			Indexes: id(compound(str("Space"), str("Kind"), str("Target"), str("DeliveryMode")))}},
		{New: func() any { return new(reservationRow) }, Schema: &memdb.TableSchema{Name: tableReservations,
			Indexes: id(compound(str("Space"), str("ProposalID")))}},
		{New: func() any { return new(expiryRow) }, Schema: &memdb.TableSchema{Name: tableExpiry,
			Indexes: id(compound(&memdb.IntFieldIndex{Field: "AtMs"}, str("Space"), str("ProposalID")))}},
		{New: func() any { return new(idemRow) }, Schema: &memdb.TableSchema{Name: tableIdem, Indexes: id(str("ID"))}},
		{New: func() any { return new(dupRow) }, Schema: &memdb.TableSchema{Name: tableDuplicates, Indexes: dupIx}},
	}
}
