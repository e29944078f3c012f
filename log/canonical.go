package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
)

// Canonical rewrites one msgpack value so that every map's entries are in
// ascending order of their encoded keys, recursively. The msgpack encoder
// sorts only a few map types and leaves the rest in Go's random map order;
// this pass makes Marshal canonical for every type, so that equal values
// give equal bytes (snapshots, state hashes, request digests). Duplicate
// keys are an error.
func Canonical(b []byte) ([]byte, error) {
	if err := CheckShape(b); err != nil {
		return nil, err
	}
	out, n, err := appendCanonical(make([]byte, 0, len(b)), b)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(b)-n)
	}
	return out, nil
}

// appendCanonical appends the canonical form of the value at the start of b
// and returns how many bytes of b it consumed. b has passed CheckShape, so
// nesting is bounded and every length is in range. A map's entries are
// appended in their original order first; only if their keys are out of
// order are they copied aside once and written back sorted.
func appendCanonical(out, b []byte) ([]byte, int, error) {
	size, children, err := item(b)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	out = append(out, b[:size]...)
	pos := size
	var n int
	if !isMap(b[0]) {
		for i := 0; i < children; i++ {
			if out, n, err = appendCanonical(out, b[pos:]); err != nil {
				return nil, 0, err
			}
			pos += n
		}
		return out, pos, nil
	}
	start := len(out)
	var small [16]entry
	entries := small[:0]
	for i := 0; i < children/2; i++ {
		e := entry{keyStart: len(out) - start}
		if err := checkKey(b[pos:]); err != nil {
			return nil, 0, err
		}
		if out, n, err = appendCanonical(out, b[pos:]); err != nil {
			return nil, 0, err
		}
		pos += n
		e.keyEnd = len(out) - start
		if out, n, err = appendCanonical(out, b[pos:]); err != nil {
			return nil, 0, err
		}
		pos += n
		e.end = len(out) - start
		entries = append(entries, e)
	}
	region := out[start:]
	key := func(e entry) []byte { return region[e.keyStart:e.keyEnd] }
	sorted := true
	for i := 1; i < len(entries) && sorted; i++ {
		sorted = bytes.Compare(key(entries[i-1]), key(entries[i])) < 0
	}
	if sorted {
		return out, pos, nil
	}
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(key(a), key(b)) })
	for i := 1; i < len(entries); i++ {
		if bytes.Equal(key(entries[i-1]), key(entries[i])) {
			return nil, 0, fmt.Errorf("%w: duplicate map key", ErrMalformed)
		}
	}
	aside := bytes.Clone(region)
	w := start
	for _, e := range entries {
		w += copy(out[w:], aside[e.keyStart:e.end])
	}
	return out, pos, nil
}

// entry locates one map entry (key, then value) relative to the map's
// first entry.
type entry struct{ keyStart, keyEnd, end int }

// checkKey accepts a map key only as a string or an integer in its
// shortest encoding, the forms Marshal produces. Then two keys are equal
// exactly when their bytes are, so sorting and duplicate detection by bytes
// agree with what a decoder sees.
func checkKey(b []byte) error {
	if shortestKey(b) {
		return nil
	}
	return fmt.Errorf("%w: map key 0x%02x is not a shortest-form string or integer", ErrMalformed, b[0])
}

// shortestKey is checkKey's test. It builds no error: it runs for every
// map key of every value encoded or decoded.
func shortestKey(b []byte) bool {
	c := b[0]
	switch {
	case c <= 0x7f || c >= 0xe0 || (c >= 0xa0 && c <= 0xbf): // fixints, fixstr
		return true
	case c == 0xd9: // str8: only for 32..255 bytes
		if len(b) < 2 || b[1] < 32 {
			return false
		}
	case c == 0xda: // str16
		if len(b) < 3 || binary.BigEndian.Uint16(b[1:]) <= 0xff {
			return false
		}
	case c == 0xdb: // str32
		if len(b) < 5 || binary.BigEndian.Uint32(b[1:]) <= 0xffff {
			return false
		}
	case c == 0xcc: // uint8: only above the fixint range
		if len(b) < 2 || b[1] < 0x80 {
			return false
		}
	case c == 0xcd:
		if len(b) < 3 || binary.BigEndian.Uint16(b[1:]) <= 0xff {
			return false
		}
	case c == 0xce:
		if len(b) < 5 || binary.BigEndian.Uint32(b[1:]) <= 0xffff {
			return false
		}
	case c == 0xcf:
		if len(b) < 9 || binary.BigEndian.Uint64(b[1:]) <= 0xffffffff {
			return false
		}
	case c == 0xd0: // int8: only below the negative fixint range
		if len(b) < 2 || int8(b[1]) >= -32 {
			return false
		}
	case c == 0xd1:
		if len(b) < 3 || int16(binary.BigEndian.Uint16(b[1:])) >= -128 {
			return false
		}
	case c == 0xd2:
		if len(b) < 5 || int32(binary.BigEndian.Uint32(b[1:])) >= -32768 {
			return false
		}
	case c == 0xd3:
		if len(b) < 9 || int64(binary.BigEndian.Uint64(b[1:])) >= -2147483648 {
			return false
		}
	default:
		return false
	}
	return true
}

func isMap(c byte) bool { return (c >= 0x80 && c <= 0x8f) || c == 0xde || c == 0xdf }
