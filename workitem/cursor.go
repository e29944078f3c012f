package workitem

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/arbiterhq/arbiter/log"
)

// Cursors are opaque: a kind, then base64url of a check and the position
// (msgpack). The check binds a cursor to its kind and to what it pages
// (tenant, graph, status), so a cursor of another query or one never
// issued is refused; a position is the last sequence returned, so pages
// strictly progress.
const maxCursorLen = 256

func encodeCursor(kind, bind string, pos uint64) string {
	body := log.MustMarshal(pos)
	sum := sha256.Sum256(append([]byte("arbiter-workitem-cursor\x00"+kind+"\x00"+bind+"\x00"), body...))
	return kind + "." + base64.RawURLEncoding.EncodeToString(append(sum[:8:8], body...))
}

func decodeCursor(kind, bind, cursor string, pos *uint64) error {
	bad := fieldErr("after", "cursor was not issued for this %s query", kind)
	if len(cursor) > maxCursorLen || !strings.HasPrefix(cursor, kind+".") {
		return bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor[len(kind)+1:])
	if err != nil || len(raw) <= 8 {
		return bad
	}
	if log.Unmarshal(raw[8:], pos) != nil || encodeCursor(kind, bind, *pos) != cursor || *pos == ^uint64(0) {
		return bad
	}
	return nil
}
