package allocation

import (
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
)

// maxWorkItemDigits bounds the digits of a work item id once leading
// zeros are dropped.
const maxWorkItemDigits = 18

// NormalizeWorkItemID is a client's work_item_id normalized: a 'T' or 't'
// then ASCII digits, leading zeros dropped ("t01" is "T1", "T000" is
// "T0"). Anything else is invalid (422).
func NormalizeWorkItemID(s string) (string, error) {
	bad := errs.Errorf(errs.CodeInvalid, "work_item_id %q: want T followed by digits", clip(s))
	if len(s) < 2 || len(s) > 64 || (s[0] != 'T' && s[0] != 't') {
		return "", bad
	}
	digits := s[1:]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", bad
		}
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		digits = "0"
	}
	if len(digits) > maxWorkItemDigits {
		return "", errs.Errorf(errs.CodeInvalid, "work_item_id %q: more than %d digits", clip(s), maxWorkItemDigits)
	}
	return "T" + digits, nil
}

// slotTarget and titleTarget are the two forms of a create_task target.
func slotTarget(space, workItem string) string { return "task:" + space + ":slot:" + workItem }
func titleTarget(space, normalized string) string {
	return "task:" + space + ":" + normalized
}

// noteTarget is a post_review_note target (spec section 2.2).
func noteTarget(space string, task uint64, criterion *int64, principal, body string) string {
	c := "none"
	if criterion != nil {
		c = strconv.FormatInt(*criterion, 10)
	}
	return "note:" + space + ":task:" + strconv.FormatUint(task, 10) + ":criterion:" + c +
		":principal:" + principal + ":body:" + NoteBodyHash(body)
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
