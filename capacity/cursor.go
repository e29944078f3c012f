package capacity

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/log"
)

// Cursors are opaque: a kind, then base64url of a check and the position
// (msgpack). The check binds a cursor to its kind and tenant, so a cursor
// of another query, tenant or one never issued is refused.
const maxCursorLen = 2048

func encodeCursor(kind, tenant string, pos any) string {
	body := log.MustMarshal(pos)
	sum := sha256.Sum256(append([]byte("arbiter-capacity-cursor\x00"+kind+"\x00"+tenant+"\x00"), body...))
	return kind + "." + base64.RawURLEncoding.EncodeToString(append(sum[:8:8], body...))
}

func decodeCursor(kind, tenant, cursor string, pos any) error {
	bad := errs.Errorf(errs.CodeInvalid, "cursor was not issued for this %s query", kind)
	if len(cursor) > maxCursorLen || !strings.HasPrefix(cursor, kind+".") {
		return bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor[len(kind)+1:])
	if err != nil || len(raw) <= 8 {
		return bad
	}
	if log.Unmarshal(raw[8:], pos) != nil || encodeCursor(kind, tenant, pos) != cursor {
		return bad
	}
	return nil
}
