package nodes

import (
	"encoding/json"
	"iter"
	"slices"
	"strconv"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/bounds"
)

// Time-aware node fields. Deadlines and timestamps must come from the
// log's clock, not from a caller's: a create or CAS may ask the FSM to
// write its own time into fields (SetNow), and a CAS may require that a
// field's deadline has passed (Due) or has not (NotDue) at the moment it
// applies. Such fields hold JSON integers: unix milliseconds.
type TimeFields struct {
	// SetNow sets each field to FSM time plus the offset in milliseconds
	// (0..MaxNowOffsetMs), after the other updates.
	SetNow map[string]int64 `msgpack:"set_now,omitempty" json:"set_now,omitempty"`
	// Due fields must hold an integer <= FSM time.
	Due []string `msgpack:"due,omitempty" json:"due,omitempty"`
	// NotDue fields must hold an integer > FSM time.
	NotDue []string `msgpack:"not_due,omitempty" json:"not_due,omitempty"`
}

// MaxNowOffsetMs bounds a SetNow offset: ten years.
const MaxNowOffsetMs = 10 * 365 * 24 * 3600 * 1000

func (t *TimeFields) check(updates map[string]json.RawMessage) error {
	if len(t.SetNow)+len(t.Due)+len(t.NotDue) > MaxFieldsPerCAS {
		return errs.Errorf(errs.CodeInvalid, "more than %d time fields", MaxFieldsPerCAS)
	}
	return checkTimeFields(t.SetNow, t.Due, t.NotDue, inMap(updates))
}

// checkTimeFields checks set_now's fields, which written must not name,
// and the due fields.
func checkTimeFields(setNow map[string]int64, due, notDue []string, written func(field string) bool) error {
	keys := make([]string, 0, len(setNow))
	for k := range setNow {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad field names the error, on every replica
	for _, k := range keys {
		if err := bounds.Identifier("set_now field", k); err != nil {
			return err
		}
		if off := setNow[k]; off < 0 || off > MaxNowOffsetMs {
			return errs.Errorf(errs.CodeInvalid, "set_now field %q: offset %d outside 0..%d ms", k, off, MaxNowOffsetMs)
		}
		if written(k) {
			return errs.Errorf(errs.CodeInvalid, "field %q is both updated and set to the time", k)
		}
	}
	for _, list := range [][]string{due, notDue} {
		for _, k := range list {
			if err := bounds.Identifier("due field", k); err != nil {
				return err
			}
		}
	}
	return nil
}

// setNowValues are the fields set_now writes: FSM time plus each offset,
// in no order.
func setNowValues(setNow map[string]int64, now int64) iter.Seq2[string, json.RawMessage] {
	return func(yield func(string, json.RawMessage) bool) {
		for k, off := range setNow { // order-free: each field is written once
			if !yield(k, json.RawMessage(strconv.FormatInt(now+off, 10))) {
				return
			}
		}
	}
}

// inMap answers for m what the checks of set_now and set_index ask: whether
// a field is written otherwise.
func inMap(m map[string]json.RawMessage) func(string) bool {
	return func(k string) bool {
		_, ok := m[k]
		return ok
	}
}

func intField(props map[string]json.RawMessage, k string) (int64, bool) {
	raw, ok := props[k]
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	return v, err == nil
}
