package authority

import (
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
)

// ConceptID is a parsed concept id: NAMESPACE-NUMBER, or
// NAMESPACE-PREFIX-NUMBER under a semantic prefix (RMDD-SEARCH-7), which
// a policy declares explicitly (ConceptNamespacePolicy.Prefix).
type ConceptID struct {
	Namespace string
	// Prefix is the semantic prefix between namespace and number: one or
	// more upper-case segments joined by hyphens ("" for none).
	Prefix string
	Number uint64
}

// Bounds of a concept id.
const (
	MaxNamespaceLen = 32
	MaxPrefixLen    = 32
	MaxNumberDigits = 18
)

// String is the canonical form, e.g. RMDD-27 or RMDD-SEARCH-7.
func (c ConceptID) String() string {
	return c.Scope() + "-" + strconv.FormatUint(c.Number, 10)
}

// Scope is the id without its number: the namespace, and the prefix if
// there is one (RMDD, RMDD-SEARCH). Policies cover numbers of a scope.
func (c ConceptID) Scope() string { return scopeOf(c.Namespace, c.Prefix) }

func scopeOf(namespace, prefix string) string {
	if prefix == "" {
		return namespace
	}
	return namespace + "-" + prefix
}

// NodeID is the identity of the graph node holding the record.
func (c ConceptID) NodeID() string { return nodePrefix + c.String() }

const nodePrefix = "concept-reservation:"

// ParseConceptID parses a complete concept id: an upper-case namespace
// (A-Z, then A-Z or 0-9, at most 32 characters), optionally a semantic
// prefix (segments of the same shape joined by hyphens, at most 32
// characters in all), and a decimal number from 1 without leading zeros
// (at most 18 digits), all joined by hyphens. The number is the last
// segment and the namespace the first, so every id has one reading.
func ParseConceptID(s string) (ConceptID, error) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return ConceptID{}, errs.Errorf(errs.CodeInvalid, "concept id %q is not NAMESPACE-NUMBER or NAMESPACE-PREFIX-NUMBER", s)
	}
	ns, prefix, hasPrefix := strings.Cut(s[:i], "-")
	if !validNamespace(ns) || (hasPrefix && !validPrefix(prefix)) {
		return ConceptID{}, errs.Errorf(errs.CodeInvalid, "concept id %q is not NAMESPACE-NUMBER or NAMESPACE-PREFIX-NUMBER with an upper-case namespace and prefix", s)
	}
	n, err := parseNumber(s[i+1:])
	if err != nil {
		return ConceptID{}, errs.Errorf(errs.CodeInvalid, "concept id %q: %v", s, err)
	}
	return ConceptID{Namespace: ns, Prefix: prefix, Number: n}, nil
}

// validPrefix: 1 to MaxPrefixLen characters, segments shaped like a
// namespace (a letter first, so a prefix never reads as a number) joined
// by single hyphens.
func validPrefix(p string) bool {
	if p == "" || len(p) > MaxPrefixLen {
		return false
	}
	for _, seg := range strings.Split(p, "-") { // at most MaxPrefixLen/2 segments
		if !validSegment(seg) {
			return false
		}
	}
	return true
}

func validNamespace(ns string) bool {
	return len(ns) <= MaxNamespaceLen && validSegment(ns)
}

// validSegment: an upper-case letter, then upper-case letters or digits.
func validSegment(ns string) bool {
	if ns == "" || ns[0] < 'A' || ns[0] > 'Z' {
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
