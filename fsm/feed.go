package fsm

import (
	"encoding/json"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/statestore"
)

// The change feed: every committed mutation appends events with a monotonic
// sequence. Retention is a count carried by Tick; a reader whose cursor
// points before the oldest retained event gets cursor_expired rather than a
// silent gap.

// Query type numbers owned by the core.
const (
	QueryMembers      QueryType = 1
	QueryChanges      QueryType = 2
	QueryCapabilities QueryType = 3
)

// MaxChangesPage bounds one page of the change feed.
const MaxChangesPage = 1024

func appendEvents(txn *statestore.Txn, m *meta, events []Event) error {
	for i := range events {
		// The command's own list of events holds the rows: nothing else
		// keeps it, and a row is never changed once inserted.
		e := &events[i]
		m.LastSeq++
		e.Seq, e.Index, e.Time = m.LastSeq, m.Index, m.Now
		if err := txn.Insert(tableChanges, e); err != nil {
			return err
		}
	}
	return nil
}

// pruneFeed deletes the oldest events beyond retain, at most budget of
// them, and returns how many it deleted.
func pruneFeed(txn *statestore.Txn, m *meta, retain uint64, budget int) int {
	n := 0
	for m.LastSeq-m.FirstSeq+1 > retain && n < budget {
		if raw, err := txn.First(tableChanges, "id", m.FirstSeq); err == nil && raw != nil {
			_ = txn.Delete(tableChanges, raw)
		}
		m.FirstSeq++
		n++
	}
	return n
}

// ChangesRequest asks for events with Seq > After.
type ChangesRequest struct {
	After uint64 `msgpack:"after"`
	Limit int    `msgpack:"limit"`
	// Values asks for the value each event wrote (Event.Value), where its
	// module gives one (Module.EventValues).
	Values bool `msgpack:"values,omitempty"`
}

// ChangesPage is one page of the change feed. Next is the cursor for the
// following page (the last returned Seq, or After when empty); LastSeq is the
// newest sequence that exists.
type ChangesPage struct {
	Events  []Event `msgpack:"events" json:"events"`
	Next    uint64  `msgpack:"next" json:"next"`
	LastSeq uint64  `msgpack:"last_seq" json:"last_seq"`
}

func changesQuerySpec(values map[string]EventValue) QuerySpec {
	return QuerySpec{Type: QueryChanges, Name: "changes", Run: func(rt *ReadTx, payload []byte) (any, error) {
		var req ChangesRequest
		if err := decodePayload(payload, &req); err != nil {
			return nil, err
		}
		if !req.Values {
			return readChanges(rt, req, nil)
		}
		return readChanges(rt, req, values)
	}}
}

// readChanges pages the feed. A principal that is not an admin sees only
// events of its own tenants; the page still advances past the others, so
// Next moves on and nothing about them leaks but their sequence numbers.
// With values, each event whose kind has an EventValue carries what it
// wrote, and the page ends early rather than exceed MaxChangesValueBytes
// of values (Next says where the following page starts: nothing is
// skipped).
func readChanges(rt *ReadTx, req ChangesRequest, values map[string]EventValue) (*ChangesPage, error) {
	txn, p := rt.Txn, rt.Principal
	if req.Limit < 0 || req.Limit > MaxChangesPage {
		return nil, errs.Errorf(errs.CodeInvalid, "limit must be between 0 and %d", MaxChangesPage)
	}
	if req.Limit == 0 {
		req.Limit = MaxChangesPage
	}
	m := readMeta(txn)
	if req.After > m.LastSeq {
		return nil, errs.Errorf(errs.CodeInvalid, "cursor %d is ahead of the feed (last %d)", req.After, m.LastSeq)
	}
	if req.After+1 < m.FirstSeq {
		// The detail says where to resume once the consumer has resynced
		// from a fresh read: after last_seq.
		e := errs.Errorf(errs.CodeCursorExpired, "events after %d were pruned; oldest retained is %d", req.After, m.FirstSeq)
		e.Detail = map[string]any{"first_seq": m.FirstSeq, "last_seq": m.LastSeq}
		return nil, e
	}
	page := &ChangesPage{Events: []Event{}, Next: req.After, LastSeq: m.LastSeq}
	it, err := txn.LowerBound(tableChanges, "id", req.After+1)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "changes: %v", err)
	}
	admin := p.HasRole(identity.RoleAdmin)
	valueBytes := 0
	for raw, scanned := it.Next(), 0; raw != nil && scanned < req.Limit; raw, scanned = it.Next(), scanned+1 {
		e := *raw.(*Event)
		if admin || (e.Tenant != "" && p.InTenant(e.Tenant)) {
			if fn := values[e.Kind]; fn != nil {
				v, written, err := fn(rt, e.Key, e.Index)
				if err != nil {
					return nil, errs.From(err)
				}
				if valueBytes += len(v); valueBytes > MaxChangesValueBytes && len(page.Events) > 0 {
					break // the next page starts with this event
				}
				e.Value, e.Overwritten = v, !written
			}
			page.Events = append(page.Events, e)
		}
		page.Next = e.Seq
	}
	return page, nil
}

// MaxChangesValueBytes bounds the values of one change-feed page read
// with values; a page that would exceed it ends early (a single event's
// value is bounded by its module: 64 KiB of properties for a node).
const MaxChangesValueBytes = 4 << 20

// EventValue gives the value a module's change event wrote, for a
// change-feed page read with values (ChangesRequest.Values); key and
// index are the event's. It returns the JSON of what key holds and
// written true while that is still what the event at index wrote; once a
// later change overwrote it (that change's event carries the newer value)
// or removed the key, written is false and value nil. It reads; it must
// not write.
type EventValue func(rt *ReadTx, key string, index uint64) (value json.RawMessage, written bool, err error)
