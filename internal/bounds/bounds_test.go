package bounds_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/internal/bounds"
	"pgregory.net/rapid"
)

// IsIdentifier answers exactly what Identifier does (it is written in
// terms of it today; this holds any faster hand-written version to it), for strings near
// every edge: empty, over the size bound, invalid UTF-8, control
// characters.
func TestIsIdentifierAgreesWithIdentifier(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.String(),
			rapid.StringOf(rapid.RuneFrom([]rune{'a', 'é', '\x00', '\n', '\u0085', '\u2028'})),
			rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
			rapid.Map(rapid.IntRange(bounds.MaxIdentifierBytes-2, bounds.MaxIdentifierBytes+2), func(n int) string { return strings.Repeat("x", n) }),
		).Draw(t, "s")
		if got, want := bounds.IsIdentifier(s), bounds.Identifier("f", s) == nil; got != want {
			t.Fatalf("IsIdentifier(%q) = %v, Identifier accepts it: %v", s, got, want)
		}
	})
}
