package workitem

import (
	"bytes"
	"encoding/json"

	"github.com/arbiterhq/arbiter/fsm"
)

// The outbox: every change of an item's status writes, in the same
// command, a change-feed event of kind "workitem_<what>" keyed by the
// item id in the item's tenant, whose payload says what happened. An
// admission's event sequence is the outbox_id its result returns;
// consumers read them with the change feed's cursor (GET /v1/changes),
// and one that falls behind the feed's retention gets cursor_expired.
const (
	EventSubmitted = "workitem_submitted"
	EventClaimed   = "workitem_claimed"
	EventRequeued  = "workitem_requeued" // a claim expired; pending again
	EventSucceeded = "workitem_succeeded"
	EventFailed    = "workitem_failed"
	EventCancelled = "workitem_cancelled"
)

// OutboxEvent is the payload of a work-item event.
type OutboxEvent struct {
	WorkItemID      string `json:"work_item_id"`
	GraphRef        string `json:"graph_ref"`
	CommandSequence uint64 `json:"command_sequence"`
	Status          string `json:"status"`
	Kind            string `json:"kind"`
	Attempt         int64  `json:"attempt"`
	Fence           uint64 `json:"fence,omitempty"`
	Reason          string `json:"reason,omitempty"`
}

// emit writes the item's outbox event of kind and returns its sequence. The
// payload is a few bounded identifiers (at most a few KiB even fully
// escaped), well inside fsm.MaxEventPayload.
func emit(tx *fsm.Tx, kind string, it *WorkItem) (uint64, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(OutboxEvent{WorkItemID: it.WorkItemID, GraphRef: it.GraphRef, CommandSequence: it.CommandSequence,
		Status: it.Status, Kind: it.Kind, Attempt: it.Attempt, Fence: it.Fence, Reason: it.Reason}); err != nil {
		return 0, internal("encode outbox event", err)
	}
	return tx.EmitPayload(kind, it.WorkItemID, it.TenantRef, bytes.TrimSpace(buf.Bytes()))
}

func endEvent(status string) string {
	switch status {
	case StatusSucceeded:
		return EventSucceeded
	case StatusFailed:
		return EventFailed
	}
	return EventCancelled
}
