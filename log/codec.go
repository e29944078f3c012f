package log

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// ErrMalformed is wrapped by every decoding error of this package.
var ErrMalformed = errors.New("malformed msgpack")

// maxDepth bounds nesting of msgpack containers in anything we decode.
const maxDepth = 64

var encPool = sync.Pool{New: func() any {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	return &pooledEncoder{buf: &buf, enc: enc}
}}

type pooledEncoder struct {
	buf *bytes.Buffer
	enc *msgpack.Encoder
}

// Marshal encodes v canonically: every map's entries sorted by encoded key
// (see Canonical), integers compact, struct fields in declaration order.
// Equal values give equal bytes. Floats cannot be encoded: no float may
// reach replicated state.
//
// A value that is an Appender writes itself; MarshalReflective is the
// definition it must match.
func Marshal(v any) ([]byte, error) {
	if a, ok := v.(Appender); ok {
		// Room for a typical result or row at once, not five doublings
		// from nothing; room for this one if it says how much it needs.
		size := 128
		if s, ok := v.(SizeBounder); ok {
			size = s.EncodedSizeBound()
		}
		return a.AppendMsgpack(make([]byte, 0, size))
	}
	return MarshalReflective(v)
}

// SizeBounder is an Appender that knows a bound on its encoded size, so
// that Marshal allocates its buffer once instead of growing it (every
// create's result, on every replica). A bound that is too small costs a
// copy, never a wrong encoding.
type SizeBounder interface {
	EncodedSizeBound() int
}

// AppendMarshal appends Marshal(v) to b: an Appender writes into b's
// spare room, so a caller that encodes many values into one reused
// buffer (a snapshot's rows) makes no garbage per value.
func AppendMarshal(b []byte, v any) ([]byte, error) {
	if a, ok := v.(Appender); ok {
		return a.AppendMsgpack(b)
	}
	body, err := MarshalReflective(v)
	if err != nil {
		return b, err
	}
	return append(b, body...), nil
}

// MarshalReflective is Marshal through msgpack's reflection and the
// canonical pass, whether or not v is an Appender: what an Appender's
// test compares it with.
func MarshalReflective(v any) ([]byte, error) {
	pe := encPool.Get().(*pooledEncoder)
	defer encPool.Put(pe)
	pe.buf.Reset()
	if err := pe.enc.Encode(v); err != nil {
		return nil, err
	}
	return Canonical(pe.buf.Bytes())
}

// MustMarshal is Marshal for values whose types cannot fail to encode (plain
// structs of strings, integers, byte slices, maps and slices of those).
// Encoding such a value only fails on a programming error.
func MustMarshal(v any) []byte {
	b, err := Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("log.MustMarshal(%T): %v", v, err))
	}
	return b
}

// Unmarshal decodes exactly one value from b into v. It checks the shape of
// b first (see CheckShape), rejects unknown struct fields and trailing bytes.
func Unmarshal(b []byte, v any) error {
	if err := CheckShape(b); err != nil {
		return err
	}
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	r := bytes.NewReader(b)
	dec.Reset(r)
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, r.Len())
	}
	return nil
}
