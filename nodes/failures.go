package nodes

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Failure is one check of a CAS that did not hold when the CAS was
// decided: a CAS that does not swap says why.
type Failure struct {
	Field string `json:"field"`
	// Check is what the request asked of the field: "equal" (a condition
	// with a value), "absent" (a condition of null), "due" or "not_due".
	Check string `json:"check"`
	// Reason is why the check failed: "missing" (the field is absent),
	// "different" (it holds another value), "present" (it exists),
	// "not_integer" (a deadline field that holds no integer),
	// "not_yet_due" (its deadline is after now_ms) or "already_due" (its
	// deadline is at or before now_ms).
	Reason string `json:"reason"`
	// NowMs is FSM time when the CAS was decided, for due and not_due.
	NowMs int64 `json:"now_ms,omitempty"`
}

// Checks and reasons of a Failure.
const (
	CheckEqual  = "equal"
	CheckAbsent = "absent"
	CheckDue    = "due"
	CheckNotDue = "not_due"

	ReasonMissing    = "missing"
	ReasonDifferent  = "different"
	ReasonPresent    = "present"
	ReasonNotInteger = "not_integer"
	ReasonNotYetDue  = "not_yet_due"
	ReasonAlreadyDue = "already_due"
)

// failures lists the checks of c that props do not pass at FSM time now:
// conditions in field order, then due and not_due fields in the order
// given, at most limit of them (0: all). A CAS swaps exactly when there is
// none. Apply decides with limit 1; a client that got swapped=false runs
// it again over the node and the time the result carries (the stored
// node and FSM time at the decision, also for a replay), which names
// every failed check without changing what Apply returns or records.
func (c *CASCommand) failures(props map[string]json.RawMessage, now int64, limit int) []Failure {
	var out []Failure
	full := func() bool { return limit > 0 && len(out) >= limit }
	keys := make([]string, 0, len(c.Conditions))
	for k := range c.Conditions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		want := c.Conditions[k]
		have, present := props[k]
		switch {
		case bytes.Equal(want, null):
			if present {
				out = append(out, Failure{Field: k, Check: CheckAbsent, Reason: ReasonPresent})
			}
		case !present:
			out = append(out, Failure{Field: k, Check: CheckEqual, Reason: ReasonMissing})
		case !bytes.Equal(have, want):
			out = append(out, Failure{Field: k, Check: CheckEqual, Reason: ReasonDifferent})
		}
		if full() {
			return out
		}
	}
	deadline := func(k, check string) {
		v, ok := intField(props, k)
		_, present := props[k]
		switch {
		case !present:
			out = append(out, Failure{Field: k, Check: check, Reason: ReasonMissing, NowMs: now})
		case !ok:
			out = append(out, Failure{Field: k, Check: check, Reason: ReasonNotInteger, NowMs: now})
		case check == CheckDue && now < v:
			out = append(out, Failure{Field: k, Check: check, Reason: ReasonNotYetDue, NowMs: now})
		case check == CheckNotDue && now >= v:
			out = append(out, Failure{Field: k, Check: check, Reason: ReasonAlreadyDue, NowMs: now})
		}
	}
	for _, k := range c.Due {
		if deadline(k, CheckDue); full() {
			return out
		}
	}
	for _, k := range c.NotDue {
		if deadline(k, CheckNotDue); full() {
			return out
		}
	}
	return out
}
