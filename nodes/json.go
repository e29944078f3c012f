package nodes

import (
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/arbiterhq/arbiter/internal/canon"
)

// A create's answer is encoded on every write through the JSON API; with
// encoding/json it was a reflective walk, a map copied to be sorted and a
// second pass over the result (3-4% of the servers' CPU under JSON load).
// The appenders here write the same bytes directly: the field order of
// the structs, property keys sorted, every string escaped as
// encoding/json's Marshal escapes it (HTML-safe: <, > and & as \u003c,
// \u003e and \u0026; U+2028 and U+2029 escaped; invalid UTF-8 as
// \ufffd). FuzzNodeJSONAgrees holds them to json.Marshal.

// AppendJSON appends the node as MarshalJSON writes it. Its properties
// must be valid JSON, as every stored node's are (canonical JSON).
func (n *Record) AppendJSON(b []byte) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"node_id":`...)
	b = appendJSONString(b, n.NodeID)
	b = append(b, `,"labels":`...)
	if n.Labels == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, l := range n.Labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, l)
		}
		b = append(b, ']')
	}
	b = append(b, `,"properties":`...)
	if n.Properties == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		for i, k := range slices.Sorted(maps.Keys(n.Properties)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendCompactHTMLSafe(b, canon.PlainIntegers(n.Properties[k]))
		}
		b = append(b, '}')
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendUint(b, n.Version, 10)
	b = append(b, `,"created_index":`...)
	b = strconv.AppendUint(b, n.CreatedIndex, 10)
	b = append(b, `,"modified_index":`...)
	b = strconv.AppendUint(b, n.ModifiedIndex, 10)
	return append(b, '}')
}

// AppendJSON appends the result as encoding/json writes it.
func (r *CreateResult) AppendJSON(b []byte) []byte {
	if r == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"created":`...)
	b = strconv.AppendBool(b, r.Created)
	b = append(b, `,"node":`...)
	b = r.Node.AppendJSON(b)
	if r.Replayed {
		b = append(b, `,"replayed":true`...)
	}
	return append(b, '}')
}

// hex spells the digits of \u escapes, as encoding/json does (lower case).
const hex = "0123456789abcdef"

// appendJSONString appends s quoted, escaped as encoding/json's Marshal
// escapes a string.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendCompactHTMLSafe appends raw, valid JSON, as encoding/json's
// Marshal appends a json.RawMessage: whitespace outside strings dropped,
// <, > and & escaped, and U+2028 and U+2029 escaped.
func appendCompactHTMLSafe(b, raw []byte) []byte {
	inString, escaped := false, false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			b = append(b, raw[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			b = append(b, raw[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[raw[i+2]&0xF])
			i += 2
			start = i + 1
			continue // the separator's bytes are inside a string
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			b = append(b, raw[start:i]...)
			start = i + 1
		}
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		}
	}
	return append(b, raw[start:]...)
}
