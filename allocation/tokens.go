package allocation

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"unicode"

	"github.com/arbiterhq/arbiter/errs"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// stopwords are dropped from token sets (spec section 2.1 step 2).
var stopwords = map[string]bool{"a": true, "an": true, "the": true, "of": true, "and": true, "to": true, "for": true}

// Tokens is the token set of s (spec section 2.1 step 2): NFC, Unicode
// default case folding, every rune that is not a letter, mark, number or
// '_' becomes a space, split on spaces, stopwords dropped. The set is
// returned sorted, without duplicates.
func Tokens(s string) []string {
	folded := cases.Fold().String(norm.NFC.String(s)) // a Caser is stateful: one per call
	spaced := strings.Map(func(r rune) rune {
		if r == '_' || unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsNumber(r) {
			return r
		}
		return ' '
	}, folded)
	seen := map[string]bool{}
	var out []string
	for _, t := range strings.Split(spaced, " ") {
		if t == "" || stopwords[t] || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// NormalizeTitle is normalize_title: NFC, trim, whitespace runs collapsed
// to one ASCII space, Unicode default case folding.
func NormalizeTitle(title string) string {
	return cases.Fold().String(collapse(norm.NFC.String(title)))
}

// NormalizeNoteBody is normalize_note_body: NFC, trim, whitespace runs
// collapsed to one ASCII space; no case folding.
func NormalizeNoteBody(body string) string { return collapse(norm.NFC.String(body)) }

// NoteBodyHash is the first 16 lowercase hex digits of the SHA-256 of
// the normalized body, as note targets carry it.
func NoteBodyHash(body string) string {
	sum := sha256.Sum256([]byte(NormalizeNoteBody(body)))
	return hex.EncodeToString(sum[:])[:16]
}

// collapse trims s and collapses its runs of Unicode white space to one
// ASCII space.
func collapse(s string) string { return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ") }

// normalizeTitle is normalize_title as command version v does it.
func normalizeTitle(title string, v uint16) string {
	return NormalizeTitle(title)
}

// checkTitle refuses (422) a title from which command version v forms
// no key.
func checkTitle(title string, v uint16) error {
	if normalizeTitle(title, v) == "" {
		return errs.New(errs.CodeInvalid, "title is empty after normalization: no conflict key can be formed")
	}
	return nil
}
