package workitem

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/arbiterhq/arbiter/log"
)

// Reservation cursors work as list cursors (cursor.go) with a richer
// position: a kind, then base64url of a check and the position
// (msgpack), the check binding it to the kind and to what it pages.

func encodeResCursor(kind, bind string, pos any) string {
	body := log.MustMarshal(pos)
	sum := sha256.Sum256(append([]byte("arbiter-workitem-reservation-cursor\x00"+kind+"\x00"+bind+"\x00"), body...))
	return kind + "." + base64.RawURLEncoding.EncodeToString(append(sum[:8:8], body...))
}

// decodeResCursor decodes cursor into pos (a pointer), or fails invalid.
func decodeResCursor(kind, bind, cursor string, pos any) error {
	bad := fieldErr("cursor", "was not issued for this %s", kind)
	if len(cursor) > maxResCursorLen || !strings.HasPrefix(cursor, kind+".") {
		return bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor[len(kind)+1:])
	if err != nil || len(raw) <= 8 {
		return bad
	}
	if log.Unmarshal(raw[8:], pos) != nil || encodeResCursor(kind, bind, pos) != cursor {
		return bad
	}
	return nil
}
