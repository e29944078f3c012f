package allocation

import (
	"cmp"
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// A catalog change rebinds the space's live tasks in the same command
// (put version 2): every live task whose client named no work item gets
// the key its title forms in the new catalog. Where two tasks then want
// one key, the earliest (lowest id) holds it and the others are
// duplicates, listed in the put's answer and by the duplicates query for
// a steward to supersede; each takes the key when it frees. Tasks that
// are not live keep their keys until a reopen rebinds them.

// MaxRebindTasks bounds the live tasks one put rebinds: a space with
// more is refused a put (409) until some finish, rather than applying a
// command of unbounded work on every replica.
const MaxRebindTasks = 4096

// liveTasks is the space's live tasks by id, or conflict when there are
// more than MaxRebindTasks. It writes nothing.
func liveTasks(tx *fsm.Tx, space string) ([]*Task, error) {
	var out []*Task
	for _, status := range []string{StatusOpen, StatusClaimed, StatusAssigned, StatusInReview} {
		it, err := tx.LowerBound(tableTasks, "status", space, status, uint64(0))
		if err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "scan tasks: %v", err)
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			t := raw.(*Task)
			if t.Space != space || t.Status != status {
				break
			}
			if len(out) == MaxRebindTasks {
				return nil, errs.Errorf(errs.CodeConflict, "space %q has more than %d live tasks for a catalog change to rebind in one command: finish or withdraw some first", space, MaxRebindTasks)
			}
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *Task) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// rebindSpace rebinds live (the space's live tasks by id) against sp,
// the space row just written, and returns how many changed key.
func rebindSpace(tx *fsm.Tx, sp *spaceRow, live []*Task) (int, error) {
	type change struct{ old, new *Task }
	var changed []change
	for _, t := range live {
		n := *t
		if rebind(sp, &n) {
			n.Version, n.UpdatedAtMs = t.Version+1, tx.Now
			changed = append(changed, change{t, &n})
		}
	}
	// Detach every changed task from its old key first, so that the
	// earliest of those that want a key decides, whatever their order.
	var vacated []ConflictKey
	for _, c := range changed {
		k := c.old.ConflictKey
		o, err := getOccupancy(tx, sp.Slug, k)
		if err != nil {
			return 0, err
		}
		if !holdsRow(o, c.old.ID) {
			if err := dropDup(tx, sp.Slug, c.old.ID); err != nil {
				return 0, err
			}
			continue
		}
		if err := tx.Delete(tableOccupancy, o); err != nil {
			return 0, errs.Errorf(errs.CodeInternal, "vacate key: %v", err)
		}
		vacated = append(vacated, k)
	}
	for _, c := range changed {
		if err := putTask(tx, c.new, "allocation_task_rebound", sp.Space.TenantRef); err != nil {
			return 0, err
		}
		if err := attach(tx, c.new); err != nil {
			return 0, err
		}
	}
	// An old key nobody took goes to its earliest duplicate.
	for _, k := range vacated {
		o, err := getOccupancy(tx, sp.Slug, k)
		if err != nil {
			return 0, err
		}
		if o == nil || !o.live(tx.Now) {
			if err := promote(tx, sp.Slug, k); err != nil {
				return 0, err
			}
		}
	}
	return len(changed), nil
}

// attach makes live task t, just rebound, hold its own key or wait for
// it as a duplicate: the earliest task that wants a key holds it.
func attach(tx *fsm.Tx, t *Task) error {
	k := t.ConflictKey
	o, err := getOccupancy(tx, t.Space, k)
	if err != nil {
		return err
	}
	if o != nil && o.live(tx.Now) {
		if holdsRow(o, t.ID) { // it held the key already, inherited
			return nil
		}
		if o.WinnerType == WinnerTask && o.WinnerID.Num > t.ID {
			h, err := getTask(tx, t.Space, o.WinnerID.Num)
			if err != nil {
				return errs.Errorf(errs.CodeInternal, "key %s names task %d: %v", k.Target, o.WinnerID.Num, err)
			}
			if h.ConflictKey == k { // a later task's own key: the earlier takes it
				if err := occupy(tx, t.Space, k, occupancyRow{WinnerType: WinnerTask, WinnerID: NumID(t.ID)}); err != nil {
					return err
				}
				return addDup(tx, h)
			}
		}
		return addDup(tx, t)
	}
	d, err := firstDup(tx, t.Space, k)
	if err != nil {
		return err
	}
	if d != nil && d.TaskID < t.ID { // an earlier task waits for the free key
		if err := promote(tx, t.Space, k); err != nil {
			return err
		}
		return addDup(tx, t)
	}
	return occupy(tx, t.Space, k, occupancyRow{WinnerType: WinnerTask, WinnerID: NumID(t.ID)})
}
