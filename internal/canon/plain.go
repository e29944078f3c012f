package canon

import "unicode/utf8"

// plainMaxDepth bounds the nesting Plain reads; deeper values are left
// to JSON and JCS (and their MaxDepth). It is far below both bounds.
const plainMaxDepth = 16

// plainMaxDigits bounds an integer Plain accepts: 15 digits is below
// MaxSafeInteger (16 digits), so JCS accepts it, and below 21, so JSON
// writes it in full digits, as it stands.
const plainMaxDigits = 15

// Plain reports whether b is one JSON value that both canonical forms
// leave as it is: JSON(b) and JCS(b) both return b. It reads b once,
// without allocating, and decides only a plain subset: no whitespace;
// strings of valid UTF-8 without escapes, control characters, DEL, or
// U+2028 and U+2029 (the one place the two forms differ); object keys
// in strictly increasing byte order (so no duplicates) without
// characters beyond U+FFFF (where UTF-8 and UTF-16 orders differ);
// integers of at most 15 digits in canonical form; true, false, null;
// nesting within 16. Anything else answers false, which means "ask JSON
// or JCS": it may still be canonical.
//
// A value canonical by Plain is canonical for both rules because each
// of them decodes it to the same value and writes that value back with
// exactly these bytes: sorted keys, no whitespace, strings that need no
// escape, integers that need no rewriting.
func Plain(b []byte) bool {
	end, ok := plainValue(b, 0, 0)
	return ok && end == len(b)
}

// plainValue reads the plain value at b[i:] and returns where it ends.
// Recursion is bounded by plainMaxDepth.
func plainValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		end, _, ok := plainString(b, i)
		return end, ok
	case c == '{' || c == '[':
		if depth >= plainMaxDepth {
			return 0, false
		}
		return plainContainer(b, i, depth)
	case c == '-' || c >= '0' && c <= '9':
		return plainInt(b, i)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit), true
		}
	}
	return 0, false
}

// plainContainer reads the object or array that opens at b[i].
func plainContainer(b []byte, i, depth int) (int, bool) {
	object, closer := b[i] == '{', byte(']')
	if object {
		closer = '}'
	}
	i++
	if i < len(b) && b[i] == closer {
		return i + 1, true
	}
	var prev []byte // the object's previous key
	for first := true; ; first = false {
		if !first {
			if i >= len(b) || b[i] != ',' {
				return 0, false
			}
			i++
		}
		if object {
			end, bmp, ok := plainString(b, i)
			if !ok || !bmp || end >= len(b) || b[end] != ':' {
				return 0, false
			}
			key := b[i+1 : end-1]
			if !first && string(key) <= string(prev) {
				return 0, false
			}
			prev, i = key, end+1
		}
		end, ok := plainValue(b, i, depth+1)
		if !ok {
			return 0, false
		}
		i = end
		if i < len(b) && b[i] == closer {
			return i + 1, true
		}
	}
}

// plainString reads the string that opens at b[i] (a quote); bmp says
// it holds no character beyond U+FFFF.
func plainString(b []byte, i int) (end int, bmp, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false, false
	}
	bmp = true
	for j := i + 1; j < len(b); {
		c := b[j]
		switch {
		case c == '"':
			return j + 1, bmp, true
		case c < 0x20 || c == '\\' || c == 0x7f:
			return 0, false, false
		case c < utf8.RuneSelf:
			j++
			continue
		}
		r, size := utf8.DecodeRune(b[j:])
		if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
			return 0, false, false
		}
		if size == 4 {
			bmp = false
		}
		j += size
	}
	return 0, false, false
}

// plainInt reads the integer at b[i:]: 0, or an optional minus and
// 1 to plainMaxDigits digits without a leading zero, not followed by a
// fraction or an exponent.
func plainInt(b []byte, i int) (int, bool) {
	j := i
	if b[j] == '-' {
		j++
	}
	start := j
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	n := j - start
	switch {
	case n == 0 || n > plainMaxDigits:
		return 0, false
	case b[start] == '0' && (n > 1 || start > i): // leading zero, or -0
		return 0, false
	case j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E'):
		return 0, false
	}
	return j, true
}

// PlainMembers calls member with the key and the value of each member
// of b, in order, if b is an object that Plain accepts; it returns false,
// calling nothing, for anything else. A key's bytes are its string
// (there is nothing to unescape) and a value is one plain value, as
// encoding/json would decode them into a map of json.RawMessage; both
// alias b.
func PlainMembers(b []byte, member func(key, value []byte)) bool {
	if len(b) < 2 || b[0] != '{' || !Plain(b) {
		return false
	}
	// Plain read every byte already: each step below succeeds, and i only
	// grows, so the loop ends at the closing brace.
	for i := 1; i < len(b) && b[i] == '"'; {
		keyEnd, _, _ := plainString(b, i)
		end, _ := plainValue(b, keyEnd+1, 1)
		member(b[i+1:keyEnd-1], b[keyEnd+1:end])
		i = end + 1 // past the comma, or the closing brace
	}
	return true
}

// PlainElements is PlainMembers for the elements of an array.
func PlainElements(b []byte, element func(value []byte)) bool {
	if len(b) < 2 || b[0] != '[' || !Plain(b) {
		return false
	}
	for i := 1; i < len(b) && b[i] != ']'; { // as in PlainMembers
		end, _ := plainValue(b, i, 1)
		element(b[i:end])
		i = end + 1
	}
	return true
}
