package fsmtest

import (
	"bytes"
	"strings"

	"github.com/arbiterhq/arbiter/log"
)

// PayloadVariants turns valid payloads, by command type, into fuzz seeds
// for Apply: each payload encoded, cut short by a byte, with a bit
// flipped in the middle and with a trailing byte; and per type, payloads
// no command accepts (empty, an empty map, nil, a huge declared length,
// an unknown field, deep nesting).
func PayloadVariants(valid map[log.Type][]any) map[log.Type][][]byte {
	encoded := make(map[log.Type][][]byte, len(valid))
	for typ, payloads := range valid {
		for _, p := range payloads {
			encoded[typ] = append(encoded[typ], log.MustMarshal(p))
		}
	}
	return EncodedVariants(encoded)
}

// EncodedVariants is PayloadVariants of payloads already encoded.
func EncodedVariants(valid map[log.Type][][]byte) map[log.Type][][]byte {
	out := make(map[log.Type][][]byte, len(valid))
	for typ, payloads := range valid {
		for _, b := range payloads {
			flipped := bytes.Clone(b)
			flipped[len(b)/2] ^= 0x01
			out[typ] = append(out[typ], b, b[:len(b)-1], flipped, append(bytes.Clone(b), 0xc0))
		}
		out[typ] = append(out[typ], nil, []byte{0x80}, []byte{0xc0}, []byte{0xdd, 0x7f, 0xff, 0xff, 0xff},
			[]byte{0x81, 0xa3, 'b', 'a', 'd', 0x01}, []byte(strings.Repeat("\x91", 100)))
	}
	return out
}
