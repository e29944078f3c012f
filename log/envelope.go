package log

import (
	"bytes"
	"encoding/binary"
	"math"
)

// The envelope is encoded and decoded on every write: once by the
// proposer, once by Apply on each replica. Going through msgpack's
// reflection and then the canonical pass cost about a sixth of a create's
// apply, so Command has a direct codec here. It is not a second format:
//
//   - appendCommand writes exactly the bytes Marshal(&c) writes (a
//     property test compares them for generated commands);
//   - decodeCommand accepts only that canonical form, and declines
//     (returns false) anything else, which then goes through the
//     reflective decoder as before: errors and edge cases keep their one
//     definition there. A fuzz test checks that whatever it accepts, the
//     reflective decoder accepts too, with an equal result.

// appendCommand appends c's canonical msgpack: a map whose keys are in
// ascending order of their encoded bytes (shorter fixstr keys first),
// empty omitempty fields left out, as the struct tags say.
func appendCommand(b []byte, c *Command) []byte {
	n := 5 // d, p, s, t, v always; a, ik, is when set
	for _, s := range [...]string{c.Adapter, c.IdemKey, c.IdemScope} {
		if s != "" {
			n++
		}
	}
	b = append(b, 0x80|byte(n))
	if c.Adapter != "" {
		b = appendString(append(b, 0xa1, 'a'), c.Adapter)
	}
	b = appendBin(append(b, 0xa1, 'd'), c.Payload)
	b = appendPrincipal(append(b, 0xa1, 'p'), &c.Principal)
	b = appendInt(append(b, 0xa1, 's'), c.Stamp)
	b = appendUint(append(b, 0xa1, 't'), uint64(c.Type))
	b = appendUint(append(b, 0xa1, 'v'), uint64(c.Version))
	if c.IdemKey != "" {
		b = appendString(append(b, 0xa2, 'i', 'k'), c.IdemKey)
	}
	if c.IdemScope != "" {
		b = appendString(append(b, 0xa2, 'i', 's'), c.IdemScope)
	}
	return b
}

func appendPrincipal(b []byte, p *Principal) []byte {
	n := 1
	if len(p.Roles) > 0 {
		n++
	}
	if len(p.Tenants) > 0 {
		n++
	}
	b = appendString(append(b, 0x80|byte(n), 0xa2, 'i', 'd'), p.ID)
	if len(p.Roles) > 0 {
		b = appendStrings(append(b, 0xa5, 'r', 'o', 'l', 'e', 's'), p.Roles)
	}
	if len(p.Tenants) > 0 {
		b = appendStrings(append(b, 0xa7, 't', 'e', 'n', 'a', 'n', 't', 's'), p.Tenants)
	}
	return b
}

func appendStrings(b []byte, ss []string) []byte {
	switch n := len(ss); {
	case n <= 15:
		b = append(b, 0x90|byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xdc), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
	}
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendString(b []byte, s string) []byte {
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
func appendBin(b []byte, p []byte) []byte {
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

func appendUint(b []byte, u uint64) []byte {
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

func appendInt(b []byte, n int64) []byte {
	switch {
	case n >= 0:
		return appendUint(b, uint64(n))
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

// decodeCommand decodes the canonical form appendCommand writes. It
// answers false, having decided nothing, for anything else: keys out of
// order or unknown, a nil payload, an empty principal list, a type or
// version that is not a shortest unsigned integer, trailing bytes.
func decodeCommand(b []byte) (Command, bool) {
	var c Command
	r := reader{b: b, ok: true}
	n := r.fixmap()
	var prev []byte
	for i := 0; i < n && r.ok; i++ {
		key := r.key(&prev)
		switch key {
		case "a":
			c.Adapter = r.str()
		case "d":
			c.Payload = r.bin()
		case "p":
			c.Principal = r.principal()
		case "s":
			c.Stamp = r.int()
		case "t":
			c.Type = Type(r.uint16())
		case "v":
			c.Version = r.uint16()
		case "ik":
			c.IdemKey = r.str()
		case "is":
			c.IdemScope = r.str()
		default:
			r.ok = false
		}
	}
	if !r.ok || r.pos != len(b) {
		return Command{}, false
	}
	return c, true
}

func (r *reader) principal() Principal {
	var p Principal
	n := r.fixmap()
	var prev []byte
	for i := 0; i < n && r.ok; i++ {
		switch r.key(&prev) {
		case "id":
			p.ID = r.str()
		case "roles":
			p.Roles = r.strs()
		case "tenants":
			p.Tenants = r.strs()
		default:
			r.ok = false
		}
	}
	return p
}

// reader reads canonical msgpack from b. Its first surprise clears ok;
// after that every read answers a zero value and the caller declines.
type reader struct {
	b   []byte
	pos int
	ok  bool
}

// take returns the next n bytes, or clears ok if there are fewer.
func (r *reader) take(n int) []byte {
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

func (r *reader) byte1() byte {
	if s := r.take(1); s != nil {
		return s[0]
	}
	return 0
}

// fixmap reads a map header of at most 15 entries, all any envelope has.
func (r *reader) fixmap() int {
	c := r.byte1()
	if c&0xf0 != 0x80 {
		r.ok = false
		return 0
	}
	return int(c & 0x0f)
}

// key reads a fixstr map key that must sort after *prev (by encoded
// bytes, as Canonical orders them), which rules out duplicates too.
func (r *reader) key(prev *[]byte) string {
	start := r.pos
	c := r.byte1()
	if c&0xe0 != 0xa0 {
		r.ok = false
		return ""
	}
	k := r.take(int(c & 0x1f))
	enc := r.b[start:r.pos]
	if !r.ok || bytes.Compare(*prev, enc) >= 0 {
		r.ok = false
		return ""
	}
	*prev = enc
	return string(k)
}

// size reads the big-endian length of width bytes that follows a
// string, bin or array header.
func (r *reader) size(width int) int {
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

func (r *reader) str() string {
	c := r.byte1()
	n := 0
	switch {
	case !r.ok:
	case c&0xe0 == 0xa0:
		n = int(c & 0x1f)
	case c >= 0xd9 && c <= 0xdb:
		n = r.size(1 << (c - 0xd9))
	default:
		r.ok = false
	}
	return string(r.take(n))
}

// bin reads a bin value into a copy: the caller may keep it after the
// log entry's buffer is reused.
func (r *reader) bin() []byte {
	c := r.byte1()
	if c < 0xc4 || c > 0xc6 {
		r.ok = false
		return nil
	}
	return bytes.Clone(r.take(r.size(1 << (c - 0xc4))))
}

// strs reads a non-empty array of strings (Marshal leaves empty ones out).
func (r *reader) strs() []string {
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
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.str()
	}
	return ss
}

// uint16 reads an unsigned integer of at most 16 bits in its shortest form.
func (r *reader) uint16() uint16 {
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

// int reads a signed integer in any of msgpack's integer forms that holds
// an int64.
func (r *reader) int() int64 {
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
