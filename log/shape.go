package log

import (
	"encoding/binary"
	"fmt"
)

// CheckShape verifies that b holds exactly one well-formed msgpack value whose
// every container length is possible given the bytes that remain, nested at
// most maxDepth deep, with no floats and no extension types. It runs in one
// pass without allocating in proportion to any claimed length, so the decoder
// that runs after it never preallocates for elements that are not there.
func CheckShape(b []byte) error {
	// pending[i] counts the values still expected by the i-th open container.
	var pending [maxDepth + 1]int
	depth := 0
	pending[0] = 1
	pos := 0
	for {
		for depth >= 0 && pending[depth] == 0 {
			depth--
		}
		if depth < 0 {
			break
		}
		if pos >= len(b) {
			return fmt.Errorf("%w: truncated at byte %d", ErrMalformed, pos)
		}
		pending[depth]--
		n, children, err := item(b[pos:])
		if err != nil {
			return fmt.Errorf("%w: at byte %d: %v", ErrMalformed, pos, err)
		}
		pos += n
		if children > 0 {
			if children > len(b)-pos {
				return fmt.Errorf("%w: container at byte %d claims %d values, %d bytes remain", ErrMalformed, pos-n, children, len(b)-pos)
			}
			if depth == maxDepth {
				return fmt.Errorf("%w: nested deeper than %d", ErrMalformed, maxDepth)
			}
			depth++
			pending[depth] = children
		}
	}
	if pos != len(b) {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(b)-pos)
	}
	return nil
}

// item returns the size of the item header plus any inline body at the start
// of b, and the number of child values that follow it (2 per map entry).
func item(b []byte) (size, children int, err error) {
	c := b[0]
	switch {
	case c <= 0x7f || c >= 0xe0: // fixints
		return 1, 0, nil
	case c <= 0x8f: // fixmap
		return 1, 2 * int(c&0x0f), nil
	case c <= 0x9f: // fixarray
		return 1, int(c & 0x0f), nil
	case c <= 0xbf: // fixstr
		return body(b, 1, int(c&0x1f))
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return 1, 0, nil
	case 0xc4, 0xd9: // bin8, str8
		return sized(b, 1)
	case 0xc5, 0xda: // bin16, str16
		return sized(b, 2)
	case 0xc6, 0xdb: // bin32, str32
		return sized(b, 4)
	case 0xcc, 0xd0:
		return fixed(b, 2)
	case 0xcd, 0xd1:
		return fixed(b, 3)
	case 0xce, 0xd2:
		return fixed(b, 5)
	case 0xcf, 0xd3:
		return fixed(b, 9)
	case 0xdc: // array16
		n, err := length(b, 2)
		return 3, n, err
	case 0xdd: // array32
		n, err := length(b, 4)
		return 5, n, err
	case 0xde: // map16
		n, err := length(b, 2)
		return 3, 2 * n, err
	case 0xdf: // map32
		n, err := length(b, 4)
		return 5, 2 * n, err
	case 0xca, 0xcb:
		return 0, 0, fmt.Errorf("floating point value")
	case 0xc7, 0xc8, 0xc9, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return 0, 0, fmt.Errorf("extension type")
	default: // 0xc1 is never used
		return 0, 0, fmt.Errorf("reserved byte 0x%02x", c)
	}
}

func length(b []byte, width int) (int, error) {
	if len(b) < 1+width {
		return 0, fmt.Errorf("truncated length")
	}
	switch width {
	case 1:
		return int(b[1]), nil
	case 2:
		return int(binary.BigEndian.Uint16(b[1:])), nil
	default:
		return int(binary.BigEndian.Uint32(b[1:])), nil
	}
}

func sized(b []byte, width int) (int, int, error) {
	n, err := length(b, width)
	if err != nil {
		return 0, 0, err
	}
	return body(b, 1+width, n)
}

func body(b []byte, header, n int) (int, int, error) {
	if n > len(b)-header {
		return 0, 0, fmt.Errorf("claims %d bytes, %d remain", n, len(b)-header)
	}
	return header + n, 0, nil
}

func fixed(b []byte, n int) (int, int, error) {
	if len(b) < n {
		return 0, 0, fmt.Errorf("truncated integer")
	}
	return n, 0, nil
}
