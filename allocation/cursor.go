package allocation

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
)

// Cursors are opaque: kind "." base64url(check[8] || position[8]), the
// check binding the cursor to its kind and filter, so a cursor of another
// query or filter, or one never issued, is refused.
const maxCursorLen = 256

func encodeCursor(kind, filter string, after uint64) string {
	var pos [8]byte
	binary.BigEndian.PutUint64(pos[:], after)
	sum := sha256.Sum256(append([]byte("arbiter-allocation-cursor\x00"+kind+"\x00"+filter+"\x00"), pos[:]...))
	return kind + "." + base64.RawURLEncoding.EncodeToString(append(sum[:8:8], pos[:]...))
}

// decodeCursor is the position after which a page starts (0: the start).
func decodeCursor(kind, filter, cursor string) (uint64, error) {
	if cursor == "" {
		return 0, nil
	}
	bad := errs.Errorf(errs.CodeInvalid, "cursor was not issued for this %s query", kind)
	if len(cursor) > maxCursorLen || !strings.HasPrefix(cursor, kind+".") {
		return 0, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor[len(kind)+1:])
	if err != nil || len(raw) != 16 {
		return 0, bad
	}
	after := binary.BigEndian.Uint64(raw[8:])
	if encodeCursor(kind, filter, after) != cursor || after == ^uint64(0) {
		return 0, bad
	}
	return after, nil
}
