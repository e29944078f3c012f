package allocation

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
)

// Cursors are opaque: kind "." base64url(check[8] || position), the
// check binding the cursor to its kind, its filter and its position, so
// a cursor of another query or filter, or one never issued, is refused.
// A position is a row id (8 bytes) or, for the lists by string keys, the
// key's fields (cursorFields).
const (
	maxCursorLen = 256
	// maxKeyCursorLen bounds a cursor whose position is a conflict key:
	// a target may hold a title of MaxTitleBytes, folded.
	maxKeyCursorLen = 16 << 10
)

func encodeCursor(kind, filter string, after uint64) string {
	var pos [8]byte
	binary.BigEndian.PutUint64(pos[:], after)
	return encodeCursorBytes(kind, filter, pos[:])
}

func encodeCursorBytes(kind, filter string, pos []byte) string {
	sum := sha256.Sum256(append([]byte("arbiter-allocation-cursor\x00"+kind+"\x00"+filter+"\x00"), pos...))
	return kind + "." + base64.RawURLEncoding.EncodeToString(append(sum[:8:8], pos...))
}

// decodeCursor is the position after which a page starts (0: the start).
func decodeCursor(kind, filter, cursor string) (uint64, error) {
	if cursor == "" {
		return 0, nil
	}
	pos, err := decodeCursorBytes(kind, filter, cursor, maxCursorLen)
	if err != nil || len(pos) != 8 || binary.BigEndian.Uint64(pos) == ^uint64(0) {
		return 0, badCursor(kind)
	}
	return binary.BigEndian.Uint64(pos), nil
}

// decodeCursorBytes is the position of a cursor this kind and filter
// issued (nil for ""), at most max bytes long.
func decodeCursorBytes(kind, filter, cursor string, max int) ([]byte, error) {
	if cursor == "" {
		return nil, nil
	}
	if len(cursor) > max || !strings.HasPrefix(cursor, kind+".") {
		return nil, badCursor(kind)
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor[len(kind)+1:])
	if err != nil || len(raw) < 8 {
		return nil, badCursor(kind)
	}
	pos := raw[8:]
	if encodeCursorBytes(kind, filter, pos) != cursor {
		return nil, badCursor(kind)
	}
	return pos, nil
}

func badCursor(kind string) error {
	return errs.Errorf(errs.CodeInvalid, "cursor was not issued for this %s query", kind)
}

// cursorFields is a position made of strings: each as a uvarint length
// and its bytes.
func cursorFields(fields ...string) []byte {
	var b []byte
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// fieldsOf splits a position cursorFields made into n strings.
func fieldsOf(pos []byte, n int) ([]string, bool) {
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		l, k := binary.Uvarint(pos)
		if k <= 0 || l > uint64(len(pos)-k) {
			return nil, false
		}
		out = append(out, string(pos[k:k+int(l)]))
		pos = pos[k+int(l):]
	}
	return out, len(pos) == 0
}
