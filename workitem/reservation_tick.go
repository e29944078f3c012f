package workitem

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// tickReservationRetention forgets at most budget reservations that
// ended more than ReservationRetention ago.
func tickReservationRetention(tx *fsm.Tx, budget int) error {
	it, err := tx.Get(tableResEnded, "id")
	if err != nil {
		return internal("scan ended reservations", err)
	}
	cutoff := tx.Now - ReservationRetention.Milliseconds()
	var old []*resTimeRow
	for raw := it.Next(); raw != nil && len(old) < budget; raw = it.Next() {
		row := raw.(*resTimeRow)
		if row.AtMs > cutoff {
			break
		}
		old = append(old, row)
	}
	for _, row := range old {
		r, err := getReservation(tx, row.ReservationID)
		if err != nil {
			return err
		}
		if r == nil || r.Status == ReservationActive {
			return errs.Errorf(errs.CodeInternal, "ended index names reservation %s, which is not ended", row.ReservationID)
		}
		if err := tx.Delete(tableReservations, r); err != nil {
			return internal("forget reservation", err)
		}
		if err := tx.Delete(tableResEnded, row); err != nil {
			return internal("unindex ended reservation", err)
		}
	}
	return nil
}
