package allocation

import (
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// Which task holds which key. A task holds keys while it wants them:
// while it is live, and from version 2 of transition and hold also while
// a steward hold is on it (a hold blocks a fresh create as it blocks a
// reopen). The keys it holds are its own and, from version 2 of
// supersede, the keys of the tasks superseded into it: occupancy stays on
// the survivor. A task that wants its own key while something else holds
// it is a duplicate: a row of allocation_duplicates names it, and when
// the key frees, the earliest duplicate on it takes it. Duplicates arise
// when a catalog change rebinds a task onto a key another holds (version
// 2 of put), or a hold is set on a finished task whose key another
// holds; a create or a reopen never makes one (it is the 409).

// MaxInheritedKeys bounds the keys a survivor holds for the tasks
// superseded into it.
const MaxInheritedKeys = 64

// wantsKeys reports whether t holds (or waits for) its keys: live, or,
// when holdKeeps (version 2), under steward hold and not superseded.
func wantsKeys(t *Task, holdKeeps bool) bool {
	return Live(t.Status) || holdKeeps && t.StewardHold && t.Status != StatusSuperseded
}

// keysOf is t's own key, then the keys it inherited.
func keysOf(t *Task) []ConflictKey {
	return append([]ConflictKey{t.ConflictKey}, t.InheritedKeys...)
}

// dupRow names a task that wants its own key while another holds it.
type dupRow struct {
	Space        string `msgpack:"space"`
	TaskID       uint64 `msgpack:"task_id"`
	Kind         string `msgpack:"kind"`
	Target       string `msgpack:"target"`
	DeliveryMode string `msgpack:"delivery_mode"`
}

func (d *dupRow) key() ConflictKey {
	return ConflictKey{Kind: d.Kind, Target: d.Target, DeliveryMode: d.DeliveryMode}
}

func getDup(s fsm.Store, space string, task uint64) (*dupRow, error) {
	raw, err := first(s, tableDuplicates, "duplicate", space, task)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*dupRow), nil
}

// firstDup is the earliest duplicate waiting for key k, or nil.
func firstDup(s fsm.Store, space string, k ConflictKey) (*dupRow, error) {
	it, err := s.LowerBound(tableDuplicates, "key", space, k.Kind, k.Target, k.DeliveryMode, uint64(0))
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read duplicates: %v", err)
	}
	raw := it.Next()
	if raw == nil {
		return nil, nil
	}
	d := raw.(*dupRow)
	if d.Space != space || d.key() != k {
		return nil, nil
	}
	return d, nil
}

// addDup records t as a duplicate on its own key.
func addDup(tx *fsm.Tx, t *Task) error {
	k := t.ConflictKey
	row := &dupRow{Space: t.Space, TaskID: t.ID, Kind: k.Kind, Target: k.Target, DeliveryMode: k.DeliveryMode}
	if old, err := getDup(tx, t.Space, t.ID); err != nil || old != nil && *old == *row {
		return err
	} else if old != nil {
		if err := tx.Delete(tableDuplicates, old); err != nil {
			return errs.Errorf(errs.CodeInternal, "delete duplicate: %v", err)
		}
	}
	if err := tx.Insert(tableDuplicates, row); err != nil {
		return errs.Errorf(errs.CodeInternal, "write duplicate: %v", err)
	}
	return nil
}

// dropDup deletes task's duplicate row, if it has one.
func dropDup(tx *fsm.Tx, space string, task uint64) error {
	d, err := getDup(tx, space, task)
	if err != nil || d == nil {
		return err
	}
	if err := tx.Delete(tableDuplicates, d); err != nil {
		return errs.Errorf(errs.CodeInternal, "delete duplicate: %v", err)
	}
	return nil
}

// promote gives free key k to the earliest duplicate waiting for it.
func promote(tx *fsm.Tx, space string, k ConflictKey) error {
	d, err := firstDup(tx, space, k)
	if err != nil || d == nil {
		return err
	}
	if err := tx.Delete(tableDuplicates, d); err != nil {
		return errs.Errorf(errs.CodeInternal, "delete duplicate: %v", err)
	}
	if err := occupy(tx, space, k, occupancyRow{WinnerType: WinnerTask, WinnerID: NumID(d.TaskID)}); err != nil {
		return err
	}
	sp, err := getSpace(tx, space)
	if err != nil {
		return err
	}
	tx.Emit("allocation_key_promoted", space+"/"+itoa(d.TaskID), sp.Space.TenantRef)
	return nil
}

// holdsRow reports whether o is the row of task id.
func holdsRow(o *occupancyRow, id uint64) bool {
	return o != nil && o.WinnerType == WinnerTask && o.WinnerID == NumID(id)
}

// releaseKeys frees every key t holds (each to its earliest duplicate,
// if any) and drops t's own duplicate row.
func releaseKeys(tx *fsm.Tx, t *Task) error {
	for _, k := range keysOf(t) {
		if err := vacate(tx, t.Space, k, WinnerTask, NumID(t.ID)); err != nil {
			return err
		}
	}
	return dropDup(tx, t.Space, t.ID)
}

// takeKeys makes t, which now wants its keys, hold every one of them
// that is free; t becomes a duplicate on its own key if another holds
// it.
func takeKeys(tx *fsm.Tx, t *Task) error {
	for i, k := range keysOf(t) {
		o, err := liveOccupant(tx, t.Space, k, tx.Now)
		switch {
		case err != nil:
			return err
		case o == nil:
			if err := occupy(tx, t.Space, k, occupancyRow{WinnerType: WinnerTask, WinnerID: NumID(t.ID)}); err != nil {
				return err
			}
		case i == 0 && !holdsRow(o, t.ID):
			if err := addDup(tx, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// inherit is survivor s with the keys of t added to what it inherited,
// or a conflict when that would pass MaxInheritedKeys. It writes
// nothing.
func inherit(t, s *Task) (*Task, error) {
	keys := slices.Clone(s.InheritedKeys)
	for _, k := range keysOf(t) {
		if k != s.ConflictKey && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) > MaxInheritedKeys {
		return nil, errs.Errorf(errs.CodeConflict, "task %d would hold %d keys of superseded tasks, more than %d", s.ID, len(keys), MaxInheritedKeys)
	}
	n := *s
	n.InheritedKeys = keys
	return &n, nil
}

// passKeys moves what superseded task t holds to survivor s (s already
// lists t's keys as inherited): each key t holds becomes s's if s wants
// keys, else frees; a key of t that is free becomes s's if s wants keys.
func passKeys(tx *fsm.Tx, t, s *Task) error {
	if err := dropDup(tx, t.Space, t.ID); err != nil {
		return err
	}
	sWants := wantsKeys(s, true)
	for _, k := range keysOf(t) {
		o, err := getOccupancy(tx, t.Space, k)
		if err != nil {
			return err
		}
		if holdsRow(o, t.ID) && !sWants {
			if err := vacate(tx, t.Space, k, WinnerTask, NumID(t.ID)); err != nil {
				return err
			}
			continue
		}
		if !sWants {
			continue
		}
		if !holdsRow(o, t.ID) {
			live, err := liveOccupant(tx, t.Space, k, tx.Now)
			if err != nil {
				return err
			}
			if live != nil {
				continue // another holds it
			}
		}
		if err := occupy(tx, t.Space, k, occupancyRow{WinnerType: WinnerTask, WinnerID: NumID(s.ID)}); err != nil {
			return err
		}
		if k == s.ConflictKey {
			if err := dropDup(tx, s.Space, s.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// rebind gives t (the handler's copy, not yet written) the key its title
// forms in sp's catalog of now, if the client named no work item and the
// title still forms a key; it keeps the key and work item of the
// create in CreatedAs the first time it changes them.
func rebind(sp *spaceRow, t *Task) bool {
	if t.WorkItemGiven || checkTitle(t.Title, currentVersion) != nil {
		return false
	}
	bk := bindKey(sp, t.Title, t.ConflictKey.DeliveryMode, currentVersion)
	if bk.key == t.ConflictKey {
		return false
	}
	if t.CreatedAs == nil {
		t.CreatedAs = &CreatedAs{ConflictKey: t.ConflictKey, WorkItemID: t.WorkItemID}
	}
	t.ConflictKey, t.WorkItemID = bk.key, bk.workItem
	return true
}
