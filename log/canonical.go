package log

import (
	"bytes"
	"fmt"
	"sort"
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
// nesting is bounded and every length is in range.
func appendCanonical(out, b []byte) ([]byte, int, error) {
	size, children, err := item(b)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	out = append(out, b[:size]...)
	pos := size
	if !isMap(b[0]) {
		for i := 0; i < children; i++ {
			var n int
			if out, n, err = appendCanonical(out, b[pos:]); err != nil {
				return nil, 0, err
			}
			pos += n
		}
		return out, pos, nil
	}
	type entry struct{ key, value []byte }
	entries := make([]entry, children/2)
	for i := range entries {
		k, n, err := appendCanonical(nil, b[pos:])
		if err != nil {
			return nil, 0, err
		}
		pos += n
		v, n, err := appendCanonical(nil, b[pos:])
		if err != nil {
			return nil, 0, err
		}
		pos += n
		entries[i] = entry{k, v}
	}
	sort.Slice(entries, func(i, j int) bool { return bytes.Compare(entries[i].key, entries[j].key) < 0 })
	for i, e := range entries {
		if i > 0 && bytes.Equal(entries[i-1].key, e.key) {
			return nil, 0, fmt.Errorf("%w: duplicate map key", ErrMalformed)
		}
		out = append(out, e.key...)
		out = append(out, e.value...)
	}
	return out, pos, nil
}

func isMap(c byte) bool { return (c >= 0x80 && c <= 0x8f) || c == 0xde || c == 0xdf }
