package bounds

import (
	"unicode"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/errs"
)

// MaxIdentifierBytes bounds every opaque identifier.
const MaxIdentifierBytes = 512

// Identifier checks that s is a non-empty opaque identifier: at most
// MaxIdentifierBytes of valid UTF-8 without control characters.
func Identifier(field, s string) error {
	if s == "" {
		return errs.Errorf(errs.CodeInvalid, "%s is empty", field)
	}
	return OptionalIdentifier(field, s)
}

// IsIdentifier reports whether Identifier accepts s. It names no field,
// so a hot path that names one only in an error builds no name for the
// identifiers that pass.
func IsIdentifier(s string) bool { return Identifier("identifier", s) == nil }

// OptionalIdentifier is Identifier that also accepts the empty string.
func OptionalIdentifier(field, s string) error {
	if len(s) > MaxIdentifierBytes {
		return errs.Errorf(errs.CodeInvalid, "%s is %d bytes, more than %d", field, len(s), MaxIdentifierBytes)
	}
	if !utf8.ValidString(s) {
		return errs.Errorf(errs.CodeInvalid, "%s is not valid UTF-8", field)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return errs.Errorf(errs.CodeInvalid, "%s contains control character %U", field, r)
		}
	}
	return nil
}
