package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Appender is a type that writes its own msgpack: exactly the bytes
// MarshalReflective writes for it (reflection, then the canonical pass),
// only without reflection. Marshal uses it when a value has it. Every
// implementation needs a property test that compares the two for
// generated values; the helpers below write each msgpack form in the
// shortest encoding, as Marshal does.
type Appender interface {
	AppendMsgpack(b []byte) ([]byte, error)
}

// AppendNil appends msgpack nil: what Marshal writes for a nil slice, map
// or pointer that is not omitted.
func AppendNil(b []byte) []byte { return append(b, 0xc0) }

// AppendBool appends a boolean.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 0xc3)
	}
	return append(b, 0xc2)
}

// AppendMapLen appends the header of a map of n entries. The caller
// appends the entries in canonical order: keys ascending by their
// encoded bytes, which for string keys is shorter first, then bytewise
// (see SortKeys).
func AppendMapLen(b []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(b, 0x80|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xde), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(b, 0xdf), uint32(n))
	}
}

// SortKeys sorts string map keys into canonical order: by length, then
// bytewise, which is the order of their encoded bytes (a string header
// grows with the length, and within a header size the length comes
// first).
func SortKeys(keys []string) {
	slices.SortFunc(keys, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
}

// AppendStrings appends a list of strings (nil as an empty array: use
// AppendNil for a nil list that is not omitted).
func AppendStrings(b []byte, ss []string) []byte {
	b = AppendArrayLen(b, len(ss))
	for _, s := range ss {
		b = AppendString(b, s)
	}
	return b
}

// AppendArrayLen appends the header of an array of n elements.
func AppendArrayLen(b []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(b, 0x90|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	default:
		return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
	}
}

// AppendString appends s in its shortest string header.
func AppendString(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

// appendBin appends p as a bin, or nil as nil, as msgpack encodes a
// []byte.
func AppendBin(b []byte, p []byte) []byte {
	switch n := len(p); {
	case p == nil:
		return append(b, 0xc0)
	case n <= math.MaxUint8:
		b = append(b, 0xc4, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xc5), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(n))
	}
	return append(b, p...)
}

// AppendUint appends u in its shortest form, as Marshal's compact
// integers do.
func AppendUint(b []byte, u uint64) []byte {
	switch {
	case u <= math.MaxInt8:
		return append(b, byte(u))
	case u <= math.MaxUint8:
		return append(b, 0xcc, byte(u))
	case u <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(u))
	case u <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(u))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), u)
	}
}

// AppendInt appends n in its shortest form: non-negative values as
// unsigned, as Marshal's compact integers do.
func AppendInt(b []byte, n int64) []byte {
	switch {
	case n >= 0:
		return AppendUint(b, uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
	}
}

// CheckAppender reports, as an error naming both encodings, whether v's
// AppendMsgpack writes other bytes than MarshalReflective: the property
// every Appender's test asserts over generated values.
func CheckAppender(v Appender) error {
	want, err := MarshalReflective(v)
	if err != nil {
		return fmt.Errorf("%T: MarshalReflective: %w", v, err)
	}
	got, err := v.AppendMsgpack(nil)
	if err != nil {
		return fmt.Errorf("%T: AppendMsgpack: %w", v, err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%T: AppendMsgpack wrote\n%x\nMarshalReflective writes\n%x", v, got, want)
	}
	return nil
}
