package client

import (
	"encoding/json"
)

// CreateRequest is the JSON form of nodes.CreateRequest.
type CreateRequest struct {
	NodeID         string           `json:"node_id"`
	Labels         []string         `json:"labels"`
	Properties     map[string]any   `json:"properties"`
	SetNow         map[string]int64 `json:"set_now,omitempty"`
	SetIndex       []string         `json:"set_index,omitempty"`
	IdempotencyKey string           `json:"idempotency_key,omitempty"`
}

// CASRequest is the JSON form of nodes.CASRequest.
type CASRequest struct {
	NodeID         string           `json:"node_id"`
	Conditions     map[string]any   `json:"conditions"`
	Updates        map[string]any   `json:"updates"`
	SetNow         map[string]int64 `json:"set_now,omitempty"`
	Due            []string         `json:"due,omitempty"`
	NotDue         []string         `json:"not_due,omitempty"`
	SetIndex       []string         `json:"set_index,omitempty"`
	AddLabels      []string         `json:"add_labels,omitempty"`
	RemoveLabels   []string         `json:"remove_labels,omitempty"`
	IdempotencyKey string           `json:"idempotency_key,omitempty"`
}

// CreateResult is the JSON form of nodes.CreateResult.
type CreateResult struct {
	Created  bool   `json:"created"`
	Node     Record `json:"node"`
	Replayed bool   `json:"replayed,omitempty"`
}

// CASResult is the JSON form of nodes.CASResult.
type CASResult struct {
	Swapped  bool      `json:"swapped"`
	Node     Record    `json:"node"`
	Failed   []Failure `json:"failed,omitempty"`
	Replayed bool      `json:"replayed,omitempty"`
}

// NodePage is the JSON form of nodes.Page.
type NodePage struct {
	Nodes      []Record `json:"nodes"`
	NextCursor string   `json:"next_cursor"`
}

// Record is the JSON form of nodes.Record: a node of the node primitives.
type Record struct {
	NodeID        string                     `json:"node_id"`
	Labels        []string                   `json:"labels"`
	Properties    map[string]json.RawMessage `json:"properties"`
	Version       uint64                     `json:"version"`
	CreatedIndex  uint64                     `json:"created_index"`
	ModifiedIndex uint64                     `json:"modified_index"`
}

// Failure is the JSON form of nodes.Failure.
type Failure struct {
	Field  string `json:"field"`
	Check  string `json:"check"`
	Reason string `json:"reason"`
	NowMs  int64  `json:"now_ms,omitempty"`
}
