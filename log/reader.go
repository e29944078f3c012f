package log

import (
	"bytes"
	"encoding/binary"
	"math"
)

// DirectDecoder is a type with a direct decoder. DecodeDirect, called on
// a zero value, reads b into it and reports whether it took b; when it
// does not, it leaves the value as it was, for the reflective decoder.
type DirectDecoder interface {
	DecodeDirect(b []byte) bool
}

// SharingDecoder is a DirectDecoder (DecodeDirect is DecodeSharing with
// a nil Strings) that reads the strings repeating across its values
// through s, sharing them: a snapshot row's, which a restore reads by
// the million.
type SharingDecoder interface {
	DecodeSharing(b []byte, s *Strings) bool
}

// Reader reads the canonical msgpack Marshal writes, for the direct
// decoders of the hottest payloads (see decodeCommand). It takes only
// that form: its first surprise (a form Marshal does not write, a key out
// of order, a truncation) declines the whole value, after which every
// read answers a zero value and Done answers false. A declined value goes
// to the reflective decoder (Unmarshal), which stays the one definition of
// what decodes and of every error; a direct decoder needs a fuzz test
// that whatever it takes, Unmarshal takes with an equal result.
type Reader struct {
	b      []byte
	pos    int
	ok     bool
	shared *Strings // see Share
}

// NewReader reads b, which must hold exactly one value.
func NewReader(b []byte) *Reader { return &Reader{b: b, ok: true} }

// OK reports whether nothing has been declined yet.
func (r *Reader) OK() bool { return r.ok }

// Done reports whether the value was read to its end with nothing
// declined.
func (r *Reader) Done() bool { return r.ok && r.pos == len(r.b) }

// Decline gives up on the value: an unknown key, say.
func (r *Reader) Decline() { r.ok = false }

// take returns the next n bytes, or declines if there are fewer.
func (r *Reader) take(n int) []byte {
	if !r.ok {
		return nil
	}
	if n < 0 || n > len(r.b)-r.pos {
		r.ok = false
		return nil
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s
}

func (r *Reader) byte1() byte {
	if s := r.take(1); s != nil {
		return s[0]
	}
	return 0
}

// size reads the big-endian length of width bytes after a header.
func (r *Reader) size(width int) int {
	s := r.take(width)
	switch {
	case s == nil:
		return 0
	case width == 1:
		return int(s[0])
	case width == 2:
		return int(binary.BigEndian.Uint16(s))
	default:
		return int(binary.BigEndian.Uint32(s))
	}
}

// Nil consumes a msgpack nil if one is next.
func (r *Reader) Nil() bool {
	if r.ok && r.pos < len(r.b) && r.b[r.pos] == 0xc0 {
		r.pos++
		return true
	}
	return false
}

// EmptyArray consumes an empty msgpack array if one is next: what Strs
// declines, for a decoder whose reflective twin reads it as an empty,
// non-nil slice.
func (r *Reader) EmptyArray() bool {
	if r.ok && r.pos < len(r.b) && r.b[r.pos] == 0x90 {
		r.pos++
		return true
	}
	return false
}

// MapLen reads a map header in its shortest form. Each entry takes two
// bytes at least: a longer claim is declined before anything is sized by
// it.
func (r *Reader) MapLen() int {
	c := r.byte1()
	n := 0
	switch {
	case !r.ok:
	case c&0xf0 == 0x80:
		n = int(c & 0x0f)
	case c == 0xde:
		if n = r.size(2); n <= 15 {
			r.ok = false
		}
	default:
		r.ok = false
	}
	if n > (len(r.b)-r.pos)/2 {
		r.ok = false
	}
	if !r.ok {
		return 0
	}
	return n
}

// Map reads a map whose keys name fields (a struct's encoding), handing
// each key to field, which must read that key's value or Decline an
// unknown key. The keys are checked as they come: each a string in its
// shortest form, sorting after the one before by encoded bytes (the
// canonical order), which rules out duplicates too. The first decline
// ends the map.
//
// key is the buffer's own bytes, valid only during the call: compare it
// with switch string(key), which copies nothing, where a string key
// would cost an allocation per field of every row a restore reads.
func (r *Reader) Map(field func(key []byte)) { r.entries(r.MapLen(), field) }

// Entries reads the n entries of a map whose header MapLen has read (a
// decoder that sizes what it fills by n), as Map does, handing each key
// as a string of its own, which the decoder may keep: for maps whose
// keys are data (property names), not field names. Such names repeat
// across values: they are shared through the Strings r was given, if any.
func (r *Reader) Entries(n int, field func(key string)) {
	r.entries(n, func(key []byte) { field(r.shared.str(key)) })
}

func (r *Reader) entries(n int, field func(key []byte)) {
	var prev []byte
	for ; n > 0 && r.ok; n-- {
		start := r.pos
		key := r.strBytes(true)
		enc := r.b[start:r.pos] // the header too: canonical order is by encoded bytes
		if !r.ok || bytes.Compare(prev, enc) >= 0 {
			r.ok = false
			return
		}
		prev = enc
		field(key)
	}
}

// Str reads a string.
func (r *Reader) Str() string { return r.str(false) }

// str reads a string, in its shortest header only if shortest.
func (r *Reader) str(shortest bool) string { return string(r.strBytes(shortest)) }

// strBytes is str's bytes, the buffer's own.
func (r *Reader) strBytes(shortest bool) []byte {
	c := r.byte1()
	n := 0
	switch {
	case !r.ok:
	case c&0xe0 == 0xa0:
		n = int(c & 0x1f)
	case c >= 0xd9 && c <= 0xdb:
		n = r.size(1 << (c - 0xd9))
		if shortest && n < [...]int{32, 256, 65536}[c-0xd9] {
			r.ok = false
		}
	default:
		r.ok = false
	}
	return r.take(n)
}

// Bin reads a bin value into a copy, which outlives the buffer read.
func (r *Reader) Bin() []byte {
	c := r.byte1()
	if c < 0xc4 || c > 0xc6 {
		r.ok = false
		return nil
	}
	return bytes.Clone(r.binView(c))
}

// binView is Bin without the copy: the bytes of the buffer, capped so
// that an append to them cannot write over what follows.
func (r *Reader) binView(c byte) []byte {
	b := r.take(r.size(1 << (c - 0xc4)))
	return b[:len(b):len(b)]
}

// BinView is Bin sharing the reader's buffer instead of copying it: for
// a caller that keeps the bytes no longer than the buffer lives
// unchanged.
func (r *Reader) BinView() []byte {
	c := r.byte1()
	if c < 0xc4 || c > 0xc6 {
		r.ok = false
		return nil
	}
	return r.binView(c)
}

// Strs reads a non-empty array of strings. An empty one is declined:
// Marshal leaves empty lists out where they may be omitted, and the
// reflective decoder decides what an empty one is elsewhere.
func (r *Reader) Strs() []string { return r.strs(nil) }

// strs is Strs, each string through shared (nil: a copy of its own).
func (r *Reader) strs(shared *Strings) []string {
	n := r.strsLen()
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = shared.str(r.strBytes(false))
	}
	return ss
}

// strsLen reads the header of a non-empty array of strings, declining
// any other (see Strs).
func (r *Reader) strsLen() int {
	c := r.byte1()
	n := 0
	switch {
	case !r.ok:
	case c&0xf0 == 0x90:
		n = int(c & 0x0f)
	case c == 0xdc || c == 0xdd:
		n = r.size(2 << (c - 0xdc))
	}
	// Each string takes a byte at least: a longer claim is not there.
	if !r.ok || n == 0 || n > len(r.b)-r.pos {
		r.ok = false
		return 0
	}
	return n
}

// Uint16 reads an unsigned integer of at most 16 bits in its shortest
// form.
func (r *Reader) Uint16() uint16 {
	c := r.byte1()
	switch {
	case !r.ok:
	case c <= 0x7f:
		return uint16(c)
	case c == 0xcc:
		if v := r.byte1(); v > 0x7f {
			return uint16(v)
		}
	case c == 0xcd:
		if s := r.take(2); s != nil {
			if v := binary.BigEndian.Uint16(s); v > math.MaxUint8 {
				return v
			}
		}
	}
	r.ok = false
	return 0
}

// Int reads a signed integer in any of msgpack's integer forms that holds
// an int64.
func (r *Reader) Int() int64 {
	c := r.byte1()
	switch {
	case !r.ok:
		return 0
	case c <= 0x7f:
		return int64(c)
	case c >= 0xe0:
		return int64(int8(c))
	case c == 0xcc:
		return int64(r.byte1())
	case c == 0xd0:
		return int64(int8(r.byte1()))
	}
	var s []byte
	switch c {
	case 0xcd, 0xd1:
		s = r.take(2)
	case 0xce, 0xd2:
		s = r.take(4)
	case 0xcf, 0xd3:
		s = r.take(8)
	default:
		r.ok = false
	}
	if s == nil {
		return 0
	}
	switch c {
	case 0xcd:
		return int64(binary.BigEndian.Uint16(s))
	case 0xd1:
		return int64(int16(binary.BigEndian.Uint16(s)))
	case 0xce:
		return int64(binary.BigEndian.Uint32(s))
	case 0xd2:
		return int64(int32(binary.BigEndian.Uint32(s)))
	case 0xd3:
		return int64(binary.BigEndian.Uint64(s))
	}
	u := binary.BigEndian.Uint64(s)
	if u > math.MaxInt64 {
		r.ok = false
		return 0
	}
	return int64(u)
}

// Uint64 reads an unsigned integer in its shortest form.
func (r *Reader) Uint64() uint64 {
	c := r.byte1()
	var v, min uint64
	switch {
	case !r.ok:
		return 0
	case c <= 0x7f:
		return uint64(c)
	case c == 0xcc:
		v, min = uint64(r.byte1()), 0x80
	case c == 0xcd:
		v, min = uint64(r.size(2)), 1<<8
	case c == 0xce:
		v, min = uint64(r.size(4)), 1<<16
	case c == 0xcf:
		if s := r.take(8); s != nil {
			v = binary.BigEndian.Uint64(s)
		}
		min = 1 << 32
	default:
		r.ok = false
		return 0
	}
	if !r.ok || v < min {
		r.ok = false
		return 0
	}
	return v
}

// Bool reads a boolean.
func (r *Reader) Bool() bool {
	switch r.byte1() {
	case 0xc3:
		return true
	case 0xc2:
	default:
		r.ok = false
	}
	return false
}
