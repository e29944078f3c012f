package allocation

import (
	"fmt"
	"slices"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
)

// The helpers below read the allocation tables straight out of the FSM's
// snapshot stream (the format of fsm/snapshot.go), so tests check the
// stored state itself, not only what reads show.

type fataler = fsmtest.Fataler

type stored struct {
	fsmtest.Stored
	spaces       []spaceRow
	tasks        []Task
	notes        []Note
	occupancy    []occupancyRow
	reservations []reservationRow
	expiry       []expiryRow
	dups         []dupRow
}

func readStored(t fataler, f *fsm.FSM) stored {
	t.Helper()
	s := fsmtest.ReadStored(t, f)
	return stored{Stored: s,
		spaces:       fsmtest.Rows[spaceRow](t, s, tableSpaces),
		tasks:        fsmtest.Rows[Task](t, s, tableTasks),
		notes:        fsmtest.Rows[Note](t, s, tableNotes),
		occupancy:    fsmtest.Rows[occupancyRow](t, s, tableOccupancy),
		reservations: fsmtest.Rows[reservationRow](t, s, tableReservations),
		expiry:       fsmtest.Rows[expiryRow](t, s, tableExpiry),
		dups:         fsmtest.Rows[dupRow](t, s, tableDuplicates),
	}
}

// digest hashes the allocation tables' rows.
func (s stored) digest() [32]byte {
	return s.Digest(func(n string) bool { return n != "meta" && n != "changes" && n != "idempotency" })
}

// invariants lists every broken rule of the stored state at FSM time now:
// each occupancy row names a holder of exactly its key (a task that
// wants keys, by its own key or one it inherited; a note; a reservation;
// a committed reservation's winner); every task that wants keys holds
// its own or is a duplicate on it, whose key something else holds, and
// no other task holds any; every note is named by its key's row (so no
// key has two occupants); every reservation is indexed as its state
// says; ids stay below the space's counters. A task wants keys while it
// is live or (version 2) under steward hold and not superseded.
func (s stored) invariants(now int64) []string {
	var bad []string
	type ref struct{ space, typ, id string }
	tasks := map[ref]Task{}
	for _, t := range s.tasks {
		tasks[ref{t.Space, WinnerTask, itoa(t.ID)}] = t
	}
	notes := map[ref]Note{}
	for _, n := range s.notes {
		notes[ref{n.Space, WinnerNote, itoa(n.ID)}] = n
	}
	res := map[[2]string]reservationRow{}
	for _, r := range s.reservations {
		res[[2]string{r.Space, r.ProposalID}] = r
	}
	held := map[ref][]ConflictKey{}
	occupied := map[[2]string]occupancyRow{} // space, key
	keyID := func(space string, k ConflictKey) [2]string {
		return [2]string{space, k.Kind + "\x00" + k.Target + "\x00" + k.DeliveryMode}
	}
	for _, o := range s.occupancy {
		r := ref{o.Space, o.WinnerType, o.WinnerID.String()}
		held[r] = append(held[r], o.key())
		occupied[keyID(o.Space, o.key())] = o
		switch o.WinnerType {
		case WinnerTask:
			t, ok := tasks[r]
			if !ok || !wantsKeys(&t, true) || !slices.Contains(keysOf(&t), o.key()) {
				bad = append(bad, fmt.Sprintf("key %s names task %s (%+v)", o.Target, r.id, t))
			}
		case WinnerNote:
			if n, ok := notes[r]; !ok || n.ConflictKey != o.key() {
				bad = append(bad, fmt.Sprintf("key %s names note %s", o.Target, r.id))
			}
		case WinnerReservedIntent:
			rr, ok := res[[2]string{o.Space, o.ProposalID}]
			if !ok || rr.State != ReservationReserved || rr.key() != o.key() || rr.ExpiresAtMs != o.ExpiresAtMs {
				bad = append(bad, fmt.Sprintf("key %s names reservation %s (%+v)", o.Target, o.ProposalID, rr))
			}
		default:
			rr, ok := res[[2]string{o.Space, o.ProposalID}]
			if !ok || rr.State != ReservationCommitted || rr.key() != o.key() || rr.Winner == nil || rr.Winner.Type != o.WinnerType || rr.Winner.ID != o.WinnerID {
				bad = append(bad, fmt.Sprintf("key %s names external %s %s without its committed reservation", o.Target, o.WinnerType, o.WinnerID))
			}
		}
	}
	dup := map[ref]dupRow{}
	for _, d := range s.dups {
		r := ref{d.Space, WinnerTask, itoa(d.TaskID)}
		dup[r] = d
		t, ok := tasks[r]
		o, busy := occupied[keyID(d.Space, d.key())]
		if !ok || !wantsKeys(&t, true) || t.ConflictKey != d.key() || !busy || o.WinnerType == WinnerTask && o.WinnerID.Num == t.ID {
			bad = append(bad, fmt.Sprintf("duplicate row of task %d on %s: task %+v, key held by %+v", d.TaskID, d.Target, t, o))
		}
	}
	for r, t := range tasks {
		ownHeld := slices.Contains(held[r], t.ConflictKey)
		if _, isDup := dup[r]; Live(t.Status) && ownHeld == isDup {
			bad = append(bad, fmt.Sprintf("live task %d (%s) holds its key %t, is a duplicate %t", t.ID, t.ConflictKey.Target, ownHeld, isDup))
		}
		if !wantsKeys(&t, true) && len(held[r]) > 0 {
			bad = append(bad, fmt.Sprintf("%s task %d still holds a key", t.Status, t.ID))
		}
		if (t.Status == StatusSuperseded) != (t.SupersededBy != nil) {
			bad = append(bad, fmt.Sprintf("task %d: status %s, superseded_by %v", t.ID, t.Status, t.SupersededBy))
		}
	}
	for r, n := range notes {
		if k := held[r]; len(k) != 1 || k[0] != n.ConflictKey {
			bad = append(bad, fmt.Sprintf("note %d is not its key's occupant", n.ID))
		}
	}
	exp := map[[2]string]int64{}
	for _, e := range s.expiry {
		exp[[2]string{e.Space, e.ProposalID}] = e.AtMs
	}
	for k, r := range res {
		at, indexed := exp[k]
		if (r.State == ReservationReserved) != indexed || indexed && at != r.ExpiresAtMs {
			bad = append(bad, fmt.Sprintf("reservation %s (%s) expiry index %d/%t", r.ProposalID, r.State, at, indexed))
		}
	}
	next := map[string][2]uint64{}
	for _, sp := range s.spaces {
		next[sp.Slug] = [2]uint64{sp.NextTaskID, sp.NextNoteID}
	}
	for _, t := range s.tasks {
		if t.ID == 0 || t.ID >= next[t.Space][0] {
			bad = append(bad, fmt.Sprintf("task id %d not below space %s's next %d", t.ID, t.Space, next[t.Space][0]))
		}
	}
	for _, n := range s.notes {
		if n.ID == 0 || n.ID >= next[n.Space][1] {
			bad = append(bad, fmt.Sprintf("note id %d not below space %s's next %d", n.ID, n.Space, next[n.Space][1]))
		}
	}
	return bad
}
