package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds on a single value.
const (
	MaxDepth       = 32    // nesting of arrays and objects
	MaxNumberChars = 128   // characters in one number literal
	MaxExponent    = 10000 // magnitude of a normalized decimal exponent
	// MaxSignificantDigits bounds a number's digits once leading and
	// trailing zeros are dropped. It keeps every canonical form shorter
	// than MaxNumberChars (at most 100 digits, a point, a sign and
	// "e+10000"), so a canonical number is always accepted again.
	MaxSignificantDigits = 100
)

// ErrInvalid is wrapped by every error this package returns.
var ErrInvalid = errors.New("invalid JSON value")

// JSON canonicalizes one JSON document. It rejects invalid UTF-8, trailing
// data, nesting beyond MaxDepth and numbers beyond the bounds above.
func JSON(raw []byte) ([]byte, error) {
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrInvalid)
	}
	if err := CheckEscapes(raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after value", ErrInvalid)
	}
	var buf bytes.Buffer
	if err := encode(&buf, v, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Value canonicalizes any Go value that encoding/json can marshal. Values that
// are already json.RawMessage or json.Number keep their exact literal before
// normalization, so no precision is lost on the way.
func Value(v any) ([]byte, error) {
	switch x := v.(type) { // the common scalars, without a JSON round trip
	case nil:
		return []byte("null"), nil
	case bool:
		return []byte(strconv.FormatBool(x)), nil
	case string:
		if utf8.ValidString(x) {
			var buf bytes.Buffer
			writeString(&buf, x)
			return buf.Bytes(), nil
		}
	case int:
		return []byte(strconv.Itoa(x)), nil
	case int64:
		return []byte(strconv.FormatInt(x, 10)), nil
	case uint64:
		return []byte(strconv.FormatUint(x, 10)), nil
	case json.Number:
		n, err := Number(string(x))
		return []byte(n), err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return JSON(raw)
}

// IsCanonical reports whether b is already in canonical form.
func IsCanonical(b []byte) bool {
	if simple, ok := isSimpleCanonical(b); simple {
		return ok
	}
	if Plain(b) { // most stored metadata: decided in one read
		return true
	}
	c, err := JSON(b)
	return err == nil && bytes.Equal(c, b)
}

// isSimpleCanonical decides the common scalars without parsing: literals,
// strings of printable ASCII with nothing to escape, and short integers
// without leading zeros. simple is false when the full check must decide.
func isSimpleCanonical(b []byte) (simple, ok bool) {
	switch {
	case len(b) == 0:
		return true, false
	case string(b) == "null" || string(b) == "true" || string(b) == "false":
		return true, true
	case b[0] == '"':
		if len(b) < 2 || b[len(b)-1] != '"' {
			return true, false
		}
		for _, c := range b[1 : len(b)-1] {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				return false, false
			}
		}
		return true, true
	case b[0] == '-' || (b[0] >= '0' && b[0] <= '9'):
		digits := b
		if b[0] == '-' {
			digits = b[1:]
		}
		if len(digits) == 0 || len(digits) > 18 {
			return false, false
		}
		for _, c := range digits {
			if c < '0' || c > '9' {
				return false, false
			}
		}
		// "0" is canonical; "-0" and leading zeros are not.
		if digits[0] == '0' {
			return true, len(b) == 1
		}
		return true, true
	}
	return false, false
}

func encode(buf *bytes.Buffer, v any, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("%w: nested deeper than %d", ErrInvalid, MaxDepth)
	}
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(x))
	case json.Number:
		n, err := Number(string(x))
		if err != nil {
			return err
		}
		buf.WriteString(n)
	case string:
		writeString(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encode(buf, e, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := encode(buf, x[k], depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("%w: unsupported type %T", ErrInvalid, v)
	}
	return nil
}

// QuotedLen is the length of s as a canonical JSON string, quotes
// included, without building it in the common case of printable ASCII.
func QuotedLen(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			var buf bytes.Buffer
			writeString(&buf, s)
			return buf.Len()
		}
	}
	return len(s) + 2
}

// writeString escapes only what JSON requires: quote, backslash and control
// characters. HTML characters stay as they are.
func writeString(buf *bytes.Buffer, s string) {
	if plainText(s) { // nothing to escape: written as it is
		buf.WriteByte('"')
		buf.WriteString(s)
		buf.WriteByte('"')
		return
	}
	encodeString(buf, s)
}

// encodeString is writeString by encoding/json, for any string.
func encodeString(buf *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a valid UTF-8 string always encodes
	buf.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
}

// plainText reports whether s is valid UTF-8 that JSON strings carry as
// it is: no quote, backslash or control character, and no U+2028 or
// U+2029 (which writeString's encoder escapes).
func plainText(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}

// Number normalizes one JSON number literal exactly. The result is an
// integer literal when the value is an integer of at most 21 digits, a plain
// decimal when its magnitude is at least 1e-6, and otherwise the form
// d.ddde±x. Signed zero becomes 0.
func Number(lit string) (string, error) {
	if len(lit) == 0 || len(lit) > MaxNumberChars {
		return "", fmt.Errorf("%w: number literal length %d", ErrInvalid, len(lit))
	}
	neg, digits, exp, err := parseNumber(lit)
	if err != nil {
		return "", err
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0", nil
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed
	if len(digits) > MaxSignificantDigits {
		return "", fmt.Errorf("%w: more than %d significant digits", ErrInvalid, MaxSignificantDigits)
	}
	// Value is digits * 10^exp; point is where the decimal point falls.
	point := len(digits) + exp
	if point-1 > MaxExponent || point-1 < -MaxExponent {
		return "", fmt.Errorf("%w: number exponent out of range", ErrInvalid)
	}
	var sb strings.Builder
	if neg {
		sb.WriteByte('-')
	}
	switch {
	case exp >= 0 && point <= 21:
		sb.WriteString(digits)
		sb.WriteString(strings.Repeat("0", exp))
	case exp < 0 && point > 0:
		sb.WriteString(digits[:point])
		sb.WriteByte('.')
		sb.WriteString(digits[point:])
	case exp < 0 && point > -6:
		sb.WriteString("0.")
		sb.WriteString(strings.Repeat("0", -point))
		sb.WriteString(digits)
	default:
		sb.WriteByte(digits[0])
		if len(digits) > 1 {
			sb.WriteByte('.')
			sb.WriteString(digits[1:])
		}
		sb.WriteByte('e')
		if point-1 >= 0 {
			sb.WriteByte('+')
		}
		sb.WriteString(strconv.Itoa(point - 1))
	}
	return sb.String(), nil
}

// parseNumber splits a JSON number literal into sign, all significant digits
// (integer part then fraction) and the power of ten that scales them.
func parseNumber(lit string) (neg bool, digits string, exp int, err error) {
	bad := func() (bool, string, int, error) {
		return false, "", 0, fmt.Errorf("%w: malformed number %q", ErrInvalid, lit)
	}
	s := lit
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, hasFrac := strings.Cut(mant, ".")
	if intPart == "" || !allDigits(intPart) || (hasFrac && (frac == "" || !allDigits(frac))) {
		return bad()
	}
	if len(intPart) > 1 && intPart[0] == '0' {
		return bad()
	}
	if hasExp {
		e, perr := strconv.Atoi(strings.TrimPrefix(expPart, "+"))
		if perr != nil || expPart == "" || expPart == "+" || expPart == "-" {
			return bad()
		}
		if e > 2*MaxExponent || e < -2*MaxExponent {
			return false, "", 0, fmt.Errorf("%w: number exponent out of range", ErrInvalid)
		}
		exp = e
	}
	return neg, intPart + frac, exp - len(frac), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// PlainIntegers returns canonical JSON with every integer written in
// full digits: the canonical form writes integers of more than 21 digits
// in exponent form (1e+21), exact but not what a reader of an answer
// expects of an integer. Integers whose digits would exceed
// MaxNumberChars stay as they are, so that the answer is always accepted
// again as input; other numbers are untouched. raw must be canonical
// (or at least valid) JSON; raw itself is returned when nothing changes.
func PlainIntegers(raw []byte) []byte {
	var out []byte // nil until something changes
	last := 0      // raw[:last] is accounted for in out
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		if c != '-' && (c < '0' || c > '9') {
			continue
		}
		j := i
		for j < len(raw) && strings.IndexByte("+-.0123456789eE", raw[j]) >= 0 {
			j++
		}
		if plain, ok := plainInteger(string(raw[i:j])); ok {
			out = append(append(out, raw[last:i]...), plain...)
			last = j
		}
		i = j - 1
	}
	if out == nil {
		return raw
	}
	return append(out, raw[last:]...)
}

// plainInteger writes lit (a number in exponent form) as an integer
// literal, if it is an integer that fits MaxNumberChars.
func plainInteger(lit string) (string, bool) {
	if !strings.ContainsAny(lit, "eE") {
		return "", false
	}
	neg, digits, exp, err := parseNumber(lit)
	if err != nil {
		return "", false
	}
	digits = strings.TrimLeft(digits, "0")
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	if trimmed == "" || exp < 0 || len(trimmed)+exp+1 > MaxNumberChars {
		return "", false
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + strings.Repeat("0", exp), true
}
