package nodes

import (
	"encoding/json"
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
	return checkTimeFields(t.SetNow, t.Due, t.NotDue, updates)
}

func checkTimeFields(setNow map[string]int64, due, notDue []string, updates map[string]json.RawMessage) error {
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
		if _, both := updates[k]; both {
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

// applySetNow writes FSM time plus offsets into props.
func applySetNow(props map[string]json.RawMessage, setNow map[string]int64, now int64) {
	for k, off := range setNow {
		props[k] = json.RawMessage(strconv.FormatInt(now+off, 10))
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
