package authority

import (
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
)

// ConceptID is a parsed NAMESPACE-NUMBER concept id.
type ConceptID struct {
	Namespace string
	Number    uint64
}

// Bounds of a concept id.
const (
	MaxNamespaceLen = 32
	MaxNumberDigits = 18
)

// String is the canonical form, e.g. RMDD-27.
func (c ConceptID) String() string {
	return c.Namespace + "-" + strconv.FormatUint(c.Number, 10)
}

// NodeID is the identity of the graph node holding the record.
func (c ConceptID) NodeID() string { return nodePrefix + c.String() }

const nodePrefix = "concept-reservation:"

// ParseConceptID parses a complete concept id: an upper-case namespace
// (A-Z, then A-Z or 0-9, at most 32 characters), a hyphen, and a decimal
// number from 1 without leading zeros (at most 18 digits).
func ParseConceptID(s string) (ConceptID, error) {
	ns, num, ok := strings.Cut(s, "-")
	if !ok || !validNamespace(ns) {
		return ConceptID{}, errs.Errorf(errs.CodeInvalid, "concept id %q is not NAMESPACE-NUMBER with an upper-case namespace", s)
	}
	n, err := parseNumber(num)
	if err != nil {
		return ConceptID{}, errs.Errorf(errs.CodeInvalid, "concept id %q: %v", s, err)
	}
	return ConceptID{Namespace: ns, Number: n}, nil
}

func validNamespace(ns string) bool {
	if ns == "" || len(ns) > MaxNamespaceLen || ns[0] < 'A' || ns[0] > 'Z' {
		return false
	}
	for i := 1; i < len(ns); i++ {
		c := ns[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func parseNumber(s string) (uint64, error) {
	if s == "" || len(s) > MaxNumberDigits {
		return 0, errs.Errorf(errs.CodeInvalid, "number must have 1 to %d digits", MaxNumberDigits)
	}
	if s[0] == '0' {
		return 0, errs.New(errs.CodeInvalid, "number must start with 1-9 (no leading zeros, no zero)")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errs.New(errs.CodeInvalid, "number must be decimal digits")
		}
	}
	return strconv.ParseUint(s, 10, 64)
}
