package canon

import (
	"fmt"
	"unicode/utf16"
)

// CheckEscapes refuses \u escapes that name a lone UTF-16 surrogate. Go's
// JSON decoder silently turns those (like invalid UTF-8 bytes) into U+FFFD,
// which would store a different value than the one sent. raw must be valid
// UTF-8; only escapes inside strings are examined.
func CheckEscapes(raw []byte) error {
	inString := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString:
			if i+1 < len(raw) && raw[i+1] == 'u' {
				r, ok := hex4(raw, i+2)
				if ok && utf16.IsSurrogate(r) {
					lo, okLo := rune(0), false
					if i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
						lo, okLo = hex4(raw, i+8)
					}
					if r >= 0xdc00 || !okLo || utf16.DecodeRune(r, lo) == 0xfffd {
						return fmt.Errorf("%w: lone UTF-16 surrogate escape at byte %d", ErrInvalid, i)
					}
					i += 6 // the pair's second half is skipped below
				}
			}
			i++ // skip the escaped character
		}
	}
	return nil
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
