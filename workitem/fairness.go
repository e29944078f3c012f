package workitem

import (
	"github.com/arbiterhq/arbiter/fsm"
)

// Fairness debt. A reservation charges its item's fairness cost to the
// debt of (tenant, profile name, group); a reserve is refused while debt
// + cost would exceed the profile's max_debt. Debt decays by decay_per_s
// cost units a second of FSM time, never below 0. It is kept in
// thousandths of a unit, so decay_per_s units a second is exactly
// decay_per_s thousandths a millisecond: integer arithmetic with no
// remainder, whenever it is applied. Tick applies it (at most once a
// second of FSM time per row, oldest first, budget rows a tick) and
// forgets debts that reached 0; every reader applies the same formula
// to the time since the row was last brought up to date, so what a
// reserve or a query sees does not depend on when Tick last ran.
// A row keeps the decay rate of the profile that last charged it.

const milli = 1000

func getDebt(s fsm.Store, tenant, profile, group string) (*debtRow, error) {
	raw, err := s.First(tableFairness, "id", tenant, profile, group)
	if err != nil {
		return nil, internal("read fairness debt", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*debtRow), nil
}

// debtAt is the row's debt in thousandths at now (0 for no row).
func debtAt(d *debtRow, now int64) int64 {
	if d == nil || d.DebtMilli <= 0 {
		return 0
	}
	elapsed := now - d.AnchorMs
	if elapsed <= 0 || d.DecayPerS <= 0 {
		return d.DebtMilli
	}
	if elapsed >= ceilDiv(d.DebtMilli, d.DecayPerS) {
		return 0
	}
	return d.DebtMilli - elapsed*d.DecayPerS
}

// paidOffAt is when the row's debt reaches 0 (0 for no decay).
func paidOffAt(d *debtRow) int64 {
	if d.DecayPerS <= 0 {
		return 0
	}
	return d.AnchorMs + ceilDiv(d.DebtMilli, d.DecayPerS)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// units is a debt in whole cost units, rounded up.
func units(debtMilli int64) int64 { return ceilDiv(debtMilli, milli) }

// setDebt stores the group's debt as of now (deleting the row at 0).
func setDebt(tx *fsm.Tx, old *debtRow, d debtRow) error {
	if old != nil {
		if err := tx.Delete(tableFairness, old); err != nil {
			return internal("update fairness debt", err)
		}
	}
	if d.DebtMilli <= 0 {
		return nil
	}
	if err := tx.Insert(tableFairness, &d); err != nil {
		return internal("store fairness debt", err)
	}
	return nil
}

// tickFairness brings at most budget debts, the longest untouched first,
// up to date: each at most once a second of FSM time.
func tickFairness(tx *fsm.Tx, budget int) error {
	it, err := tx.Get(tableFairness, "anchor")
	if err != nil {
		return internal("scan fairness debts", err)
	}
	var due []*debtRow
	for raw := it.Next(); raw != nil && len(due) < budget; raw = it.Next() {
		d := raw.(*debtRow)
		if d.AnchorMs > tx.Now-milli {
			break
		}
		due = append(due, d)
	}
	for _, d := range due {
		n := *d
		n.DebtMilli, n.AnchorMs = debtAt(d, tx.Now), tx.Now
		if err := setDebt(tx, d, n); err != nil {
			return err
		}
	}
	return nil
}

func debtOf(d *debtRow, now int64) Debt {
	m := debtAt(d, now)
	out := Debt{Profile: d.Profile, Group: d.Group, Debt: units(m), DebtMilli: m, DecayPerS: d.DecayPerS, UpdatedAtMs: d.AnchorMs}
	if m > 0 {
		out.PaidOffAtMs = paidOffAt(d)
	}
	return out
}
