package allocation

import (
	"strconv"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// The row reads every command and query shares. Rows read from the store
// are never changed in place: callers copy, change, insert.

func first(s fsm.Store, table, what string, args ...any) (any, error) {
	raw, err := s.First(table, "id", args...)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read %s: %v", what, err)
	}
	return raw, nil
}

// getSpace is the space, or not_found.
func getSpace(s fsm.Store, slug string) (*spaceRow, error) {
	raw, err := first(s, tableSpaces, "space", slug)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, noSpace(slug)
	}
	return raw.(*spaceRow), nil
}

// getTask is the task, or not_found.
func getTask(s fsm.Store, space string, id uint64) (*Task, error) {
	raw, err := first(s, tableTasks, "task", space, id)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errs.Errorf(errs.CodeNotFound, "no task %d in space %q", id, space)
	}
	return raw.(*Task), nil
}

func getNote(s fsm.Store, space string, id uint64) (*Note, error) {
	raw, err := first(s, tableNotes, "note", space, id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*Note), nil
}

// getOccupancy is the row on key (live or an expired reservation), or nil.
func getOccupancy(s fsm.Store, space string, k ConflictKey) (*occupancyRow, error) {
	raw, err := first(s, tableOccupancy, "occupancy", space, k.Kind, k.Target, k.DeliveryMode)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*occupancyRow), nil
}

// liveOccupant is the row holding key at now, or nil when the key is
// free. A key whose row is a reservation that expired (and Tick has not
// dropped yet) while a duplicate waits for it is the earliest
// duplicate's: Tick will give it the key, so nothing else may take it
// meanwhile.
func liveOccupant(s fsm.Store, space string, k ConflictKey, now int64) (*occupancyRow, error) {
	o, err := getOccupancy(s, space, k)
	if err != nil {
		return nil, err
	}
	if o != nil && o.live(now) {
		return o, nil
	}
	d, err := firstDup(s, space, k)
	if err != nil || d == nil {
		return nil, err
	}
	return &occupancyRow{Space: space, Kind: k.Kind, Target: k.Target, DeliveryMode: k.DeliveryMode, WinnerType: WinnerTask, WinnerID: NumID(d.TaskID)}, nil
}

func getReservation(s fsm.Store, space, proposal string) (*reservationRow, error) {
	raw, err := first(s, tableReservations, "reservation", space, proposal)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*reservationRow), nil
}

func getIdem(s fsm.Store, id string) (*idemRow, error) {
	raw, err := first(s, tableIdem, "idempotency key", id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*idemRow), nil
}

// occupy makes the key's row name winner, replacing whatever row (an
// expired reservation) was there.
func occupy(tx *fsm.Tx, space string, k ConflictKey, row occupancyRow) error {
	row.Space, row.Kind, row.Target, row.DeliveryMode = space, k.Kind, k.Target, k.DeliveryMode
	if err := tx.Insert(tableOccupancy, &row); err != nil {
		return errs.Errorf(errs.CodeInternal, "occupy key: %v", err)
	}
	return nil
}

// vacate deletes the key's row if it is the one of winner (type and id),
// and gives the key to the earliest duplicate waiting for it, if any.
func vacate(tx *fsm.Tx, space string, k ConflictKey, winnerType string, id WinnerID) error {
	o, err := getOccupancy(tx, space, k)
	if err != nil || o == nil || o.WinnerType != winnerType || o.WinnerID != id {
		return err
	}
	if err := tx.Delete(tableOccupancy, o); err != nil {
		return errs.Errorf(errs.CodeInternal, "vacate key: %v", err)
	}
	return promote(tx, space, k)
}

// conflictOf is the 409 body naming the live occupant o of key k.
func conflictOf(s fsm.Store, o *occupancyRow) (*Conflict, error) {
	k := o.key()
	if o.WinnerType == WinnerReservedIntent {
		return reservedConflict(k, o.ProposalID), nil
	}
	w, err := winnerOf(s, o, 0)
	if err != nil {
		return nil, err
	}
	return &Conflict{Err: ErrAllocationConflict, Code: CodeKeyOccupied, ConflictKey: &k, Outcome: OutcomeRedirect, Winner: &w}, nil
}

// winnerOf names what row o holds its key for: a task with its status,
// a note, a reserved intent (its proposal id), an external object.
func winnerOf(s fsm.Store, o *occupancyRow, now int64) (Winner, error) {
	switch o.WinnerType {
	case WinnerReservedIntent:
		return Winner{Type: WinnerReservedIntent, ID: StrID(o.ProposalID)}, nil
	case WinnerTask:
		t, err := getTask(s, o.Space, o.WinnerID.Num)
		if err != nil {
			return Winner{}, errs.Errorf(errs.CodeInternal, "key %s names task %d: %v", o.Target, o.WinnerID.Num, err)
		}
		return Winner{Type: WinnerTask, ID: o.WinnerID, Status: t.Status}, nil
	}
	return Winner{Type: o.WinnerType, ID: o.WinnerID}, nil
}

// reservedConflict is the 409 body of a loser to proposal's reservation
// of key k.
func reservedConflict(k ConflictKey, proposal string) *Conflict {
	return &Conflict{Err: ErrAllocationConflict, Code: CodeKeyReserved, ConflictKey: &k, Outcome: OutcomeIdle,
		Winner: &Winner{Type: WinnerReservedIntent, ID: StrID(proposal)}, ReservedProposalID: proposal, RetryAfterMs: RetryAfterMs}
}

// superseded is the 409 body of an action on a superseded task.
func superseded(t *Task) *Conflict {
	by := uint64(0)
	if t.SupersededBy != nil {
		by = *t.SupersededBy
	}
	return &Conflict{Err: ErrTaskSuperseded, SupersededBy: by}
}

// putTask inserts t (a fresh copy) and emits its event.
func putTask(tx *fsm.Tx, t *Task, event, tenant string) error {
	if err := tx.Insert(tableTasks, t); err != nil {
		return errs.Errorf(errs.CodeInternal, "write task: %v", err)
	}
	tx.Emit(event, t.Space+"/"+itoa(t.ID), tenant)
	return nil
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
