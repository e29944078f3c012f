package nodes

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// GetQuery reads one node.
type GetQuery struct {
	NodeID string `msgpack:"node_id"`
}

// LabelQuery pages through the nodes carrying a label, in node id order.
type LabelQuery struct {
	Label string `msgpack:"label"`
	// After is the cursor returned by the previous page; empty for the first.
	After string `msgpack:"after"`
	// Limit is the page size, 1..MaxLabelPage; 0 means MaxLabelPage.
	Limit int `msgpack:"limit"`
}

// Page is one page of nodes. NextCursor is empty on the last page.
type Page struct {
	Nodes      []Record `msgpack:"nodes" json:"nodes"`
	NextCursor string   `msgpack:"next_cursor" json:"next_cursor"`
}

func (a access) runGetNode(rt *fsm.ReadTx, payload []byte) (any, error) {
	if err := a.raw(rt.Principal, rt.Adapter); err != nil {
		return nil, err
	}
	var q GetQuery
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	if err := validateNodeID(q.NodeID); err != nil {
		return nil, err
	}
	n, err := getNode(rt.Txn, q.NodeID)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, errs.Errorf(errs.CodeNotFound, "node %q does not exist", q.NodeID)
	}
	return *n, nil
}

func (a access) runNodesByLabel(rt *fsm.ReadTx, payload []byte) (any, error) {
	if err := a.raw(rt.Principal, rt.Adapter); err != nil {
		return nil, err
	}
	var q LabelQuery
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	return nodesByLabel(rt.Txn, q)
}

func nodesByLabel(txn fsm.Store, q LabelQuery) (*Page, error) {
	if err := validateLabelQuery(&q); err != nil {
		return nil, err
	}
	after := ""
	if q.After != "" {
		var err error
		if after, err = decodeCursor(q.Label, q.After); err != nil {
			return nil, err
		}
	}
	it, err := txn.LowerBound(tableLabels, "id", q.Label, after)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "label scan: %v", err)
	}
	page := &Page{Nodes: []Record{}}
	// Read one row past the page to know whether another page exists.
	for raw := it.Next(); raw != nil; raw = it.Next() {
		row := raw.(*labelRow)
		if row.Label != q.Label {
			break
		}
		if row.NodeID <= after {
			continue // only the cursor's own row can be here; progress is strict
		}
		if len(page.Nodes) == q.Limit {
			page.NextCursor = encodeCursor(q.Label, page.Nodes[len(page.Nodes)-1].NodeID)
			break
		}
		n, err := getNode(txn, row.NodeID)
		if err != nil {
			return nil, err
		}
		if n == nil {
			return nil, errs.Errorf(errs.CodeInternal, "label %q indexes missing node %q", q.Label, row.NodeID)
		}
		page.Nodes = append(page.Nodes, *n)
	}
	return page, nil
}

func validateLabelQuery(q *LabelQuery) error {
	if _, err := normalizeLabels([]string{q.Label}); err != nil {
		return err
	}
	if q.Limit < 0 || q.Limit > MaxLabelPage {
		return errs.Errorf(errs.CodeInvalid, "limit must be between 1 and %d", MaxLabelPage)
	}
	if q.Limit == 0 {
		q.Limit = MaxLabelPage
	}
	return nil
}

// Cursors are opaque to callers: "n1." then base64url of a label check and
// the last node id returned. The check binds a cursor to its label, so a
// cursor from another query, a truncated one or an invented one is refused.
const cursorPrefix = "n1."

func encodeCursor(label, lastID string) string {
	sum := sha256.Sum256([]byte("arbiter-label-cursor\x00" + label + "\x00" + lastID))
	raw := append(sum[:8:8], lastID...)
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(raw)
}

func decodeCursor(label, cursor string) (string, error) {
	bad := errs.Errorf(errs.CodeInvalid, "cursor was not issued for label %q", label)
	if len(cursor) > maxCursorChars || !strings.HasPrefix(cursor, cursorPrefix) {
		return "", bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor[len(cursorPrefix):])
	if err != nil || len(raw) <= 8 {
		return "", bad
	}
	lastID := string(raw[8:])
	if validateNodeID(lastID) != nil || encodeCursor(label, lastID) != cursor {
		return "", bad
	}
	return lastID, nil
}
