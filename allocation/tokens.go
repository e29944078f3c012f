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

// NormalizeTitle is normalize_title as the newest command version does
// it: NFC, trim, runs of white space and control characters (Unicode
// Cc, U+001C-U+001F included, which unicode.IsSpace leaves out) collapsed
// to one ASCII space, Unicode default case folding. Control characters
// thus separate words here as they do in Tokens.
func NormalizeTitle(title string) string { return normalizeTitle(title, currentVersion) }

// normalizeTitle is normalize_title as command version v does it:
// version 1 collapsed white space only.
func normalizeTitle(title string, v uint16) string {
	sep := unicode.IsSpace
	if v >= 2 {
		sep = isTitleSeparator
	}
	return cases.Fold().String(collapseFunc(norm.NFC.String(title), sep))
}

func isTitleSeparator(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }

// visible reports whether s has a rune a reader sees: a letter, mark,
// number, punctuation or symbol (not white space, control or format
// characters such as U+200B).
func visible(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S) {
			return true
		}
	}
	return false
}

// checkTitle refuses (422) a title from which command version v forms
// no key: one empty after normalization, and from version 2 on one
// without a visible character.
func checkTitle(title string, v uint16) error {
	if v >= 2 && !visible(title) {
		return errs.New(errs.CodeInvalid, "title has no visible character: no conflict key can be formed")
	}
	if normalizeTitle(title, v) == "" {
		return errs.New(errs.CodeInvalid, "title is empty after normalization: no conflict key can be formed")
	}
	return nil
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
func collapse(s string) string { return collapseFunc(s, unicode.IsSpace) }

// collapseFunc trims s and collapses its runs of separators to one ASCII
// space.
func collapseFunc(s string, sep func(rune) bool) string {
	return strings.Join(strings.FieldsFunc(s, sep), " ")
}
