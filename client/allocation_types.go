package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// PutSpaceRequest is the JSON form of allocation.PutSpaceRequest.
type PutSpaceRequest struct {
	TenantRef       string       `json:"tenant_ref,omitempty"`
	Catalog         []CatalogRow `json:"catalog"`
	DeliveryModes   []string     `json:"delivery_modes,omitempty"`
	WindowMs        int64        `json:"window_ms,omitempty"`
	AdHocSlots      bool         `json:"adhoc_slots,omitempty"`
	ExpectedVersion *uint64      `json:"expected_version,omitempty"`
}

// SpaceResult is the JSON form of allocation.SpaceResult.
type SpaceResult struct {
	Space      Space          `json:"space"`
	Rebound    int64          `json:"rebound,omitempty"`
	Duplicates *DuplicatePage `json:"duplicates,omitempty"`
}

// SpacePage is the JSON form of allocation.SpacePage.
type SpacePage struct {
	Spaces     []Space `json:"spaces"`
	NextCursor string  `json:"next_cursor"`
}

// AllocationReservationPage is the JSON form of allocation.ReservationPage.
type AllocationReservationPage struct {
	Reservations []AllocationReservation `json:"reservations"`
	NextCursor   string                  `json:"next_cursor"`
}

// OccupancyPage is the JSON form of allocation.OccupancyPage.
type OccupancyPage struct {
	Occupancy  []Occupancy `json:"occupancy"`
	NextCursor string      `json:"next_cursor"`
}

// DuplicatePage is the JSON form of allocation.DuplicatePage.
type DuplicatePage struct {
	Duplicates []Duplicate `json:"duplicates"`
	NextCursor string      `json:"next_cursor"`
}

// BindRequest is the JSON form of allocation.BindRequest.
type BindRequest struct {
	Title      string  `json:"title"`
	WorkItemID *string `json:"work_item_id,omitempty"`
}

// BindResult is the JSON form of allocation.BindResult.
type BindResult struct {
	WorkItemID *string `json:"work_item_id"`
	Target     string  `json:"target"`
	Scores     []Score `json:"scores"`
}

// CreateTaskRequest is the JSON form of allocation.CreateTaskRequest.
type CreateTaskRequest struct {
	Title        string  `json:"title"`
	DeliveryMode string  `json:"delivery_mode"`
	WorkItemID   *string `json:"work_item_id,omitempty"`
}

// TaskResult is the JSON form of allocation.TaskResult.
type TaskResult struct {
	Task Task `json:"task"`
}

// TaskPage is the JSON form of allocation.TaskPage.
type TaskPage struct {
	Tasks      []Task `json:"tasks"`
	NextCursor string `json:"next_cursor"`
}

// TaskTransitionRequest is the JSON form of allocation.TransitionRequest.
type TaskTransitionRequest struct {
	Action          string  `json:"action"`
	ExpectedVersion *uint64 `json:"expected_version,omitempty"`
	Assignee        string  `json:"assignee,omitempty"`
}

// SupersedeRequest is the JSON form of allocation.SupersedeRequest.
type SupersedeRequest struct {
	SurvivingTask uint64 `json:"surviving_task"`
	Reason        string `json:"reason"`
}

// HoldRequest is the JSON form of allocation.HoldRequest.
type HoldRequest struct {
	Hold bool `json:"hold"`
}

// NoteRequest is the JSON form of allocation.NoteRequest.
type NoteRequest struct {
	Kind           string `json:"kind"`
	CriterionIndex *int64 `json:"criterion_index"`
	Body           string `json:"body"`
	DeliveryMode   string `json:"delivery_mode"`
}

// NoteResult is the JSON form of allocation.NoteResult.
type NoteResult struct {
	Note Note `json:"note"`
}

// NotePage is the JSON form of allocation.NotePage.
type NotePage struct {
	Notes      []Note `json:"notes"`
	NextCursor string `json:"next_cursor"`
}

// WindowRequest is the JSON form of allocation.WindowRequest.
type WindowRequest struct {
	Proposals []Proposal `json:"proposals"`
}

// WindowResult is the JSON form of allocation.WindowResult.
type WindowResult struct {
	Results []WindowEntry `json:"results"`
}

// KeyReserveRequest is the JSON form of allocation.ReserveRequest.
type KeyReserveRequest struct {
	ProposalID   string  `json:"proposal_id"`
	Title        string  `json:"title"`
	DeliveryMode string  `json:"delivery_mode"`
	WorkItemID   *string `json:"work_item_id,omitempty"`
}

// AllocationReservationResult is the JSON form of allocation.ReservationResult.
type AllocationReservationResult struct {
	Reservation AllocationReservation `json:"reservation"`
}

// CommitRequest is the JSON form of allocation.CommitRequest.
type CommitRequest struct {
	Winner *Winner `json:"winner"`
}

// Occupancy is the JSON form of allocation.Occupancy.
type Occupancy struct {
	ConflictKey ConflictKey `json:"conflict_key"`
	Winner      Winner      `json:"winner"`
	ProposalID  string      `json:"proposal_id,omitempty"`
	ExpiresAtMs int64       `json:"expires_at_ms,omitempty"`
}

// DropResult is the JSON form of allocation.AbortResult.
type DropResult struct {
	ProposalID  string      `json:"proposal_id"`
	ConflictKey ConflictKey `json:"conflict_key"`
	Dropped     bool        `json:"dropped"`
}

// AllocationConflict is the JSON form of allocation.Conflict.
type AllocationConflict struct {
	Err                string       `json:"error"`
	Code               string       `json:"code,omitempty"`
	ConflictKey        *ConflictKey `json:"conflict_key,omitempty"`
	Outcome            string       `json:"outcome,omitempty"`
	Winner             *Winner      `json:"winner,omitempty"`
	ReservedProposalID string       `json:"reserved_proposal_id,omitempty"`
	RetryAfterMs       int64        `json:"retry_after_ms,omitempty"`
	SupersededBy       uint64       `json:"superseded_by,omitempty"`
	WriteOccurred      bool         `json:"write_occurred"`
}

// CatalogRow is the JSON form of allocation.CatalogRow.
type CatalogRow struct {
	WorkItemID     string   `json:"work_item_id"`
	CanonicalTitle string   `json:"canonical_title"`
	Aliases        []string `json:"aliases"`
}

// Space is the JSON form of allocation.Space.
type Space struct {
	Slug          string       `json:"slug"`
	TenantRef     string       `json:"tenant_ref"`
	Catalog       []CatalogRow `json:"catalog"`
	DeliveryModes []string     `json:"delivery_modes"`
	WindowMs      int64        `json:"window_ms"`
	AdHocSlots    bool         `json:"adhoc_slots"`
	Version       uint64       `json:"version"`
	UpdatedBy     string       `json:"updated_by"`
	UpdatedAtMs   int64        `json:"updated_at_ms"`
}

// AllocationReservation is the JSON form of allocation.Reservation.
type AllocationReservation struct {
	ProposalID  string      `json:"proposal_id"`
	ConflictKey ConflictKey `json:"conflict_key"`
	ExpiresAtMs int64       `json:"expires_at_ms"`
	WorkItemID  *string     `json:"work_item_id"`
	Principal   string      `json:"principal"`
	State       string      `json:"state"`
	Winner      *Winner     `json:"winner,omitempty"`
}

// Duplicate is the JSON form of allocation.Duplicate.
type Duplicate struct {
	TaskID      uint64      `json:"task_id"`
	Title       string      `json:"title"`
	Status      string      `json:"status"`
	ConflictKey ConflictKey `json:"conflict_key"`
	HeldBy      Winner      `json:"held_by"`
}

// Score is the JSON form of allocation.Score.
type Score struct {
	WorkItemID   string `json:"work_item_id"`
	Intersection int64  `json:"intersection"`
	Union        int64  `json:"union"`
}

// Task is the JSON form of allocation.Task.
type Task struct {
	ID                    uint64        `json:"id"`
	Space                 string        `json:"space"`
	Title                 string        `json:"title"`
	Status                string        `json:"status"`
	WorkItemID            *string       `json:"work_item_id"`
	ConflictKey           ConflictKey   `json:"conflict_key"`
	CreatedBy             string        `json:"created_by"`
	Version               uint64        `json:"version"`
	CreatedAtMs           int64         `json:"created_at_ms"`
	UpdatedAtMs           int64         `json:"updated_at_ms"`
	WorkItemGiven         bool          `json:"work_item_given"`
	StewardHold           bool          `json:"steward_hold"`
	Assignee              string        `json:"assignee,omitempty"`
	Reviewer              string        `json:"reviewer,omitempty"`
	InheritedKeys         []ConflictKey `json:"inherited_keys,omitempty"`
	SupersededBy          *uint64       `json:"superseded_by,omitempty"`
	Reason                string        `json:"reason,omitempty"`
	SupersededByPrincipal string        `json:"superseded_by_principal,omitempty"`
	SupersededAtMs        int64         `json:"superseded_at_ms,omitempty"`
}

// Note is the JSON form of allocation.Note.
type Note struct {
	ID             uint64      `json:"id"`
	Space          string      `json:"space"`
	TaskID         uint64      `json:"task_id"`
	CriterionIndex *int64      `json:"criterion_index"`
	Principal      string      `json:"principal"`
	ConflictKey    ConflictKey `json:"conflict_key"`
	Body           string      `json:"body"`
	CreatedAtMs    int64       `json:"created_at_ms"`
}

// Proposal is the JSON form of allocation.Proposal.
type Proposal struct {
	ProposalID     string  `json:"proposal_id"`
	Title          string  `json:"title"`
	DeliveryMode   string  `json:"delivery_mode"`
	WorkItemID     *string `json:"work_item_id,omitempty"`
	ReceivedSeq    *uint64 `json:"received_seq,omitempty"`
	IdempotencyKey string  `json:"idempotency_key,omitempty"`
}

// WindowEntry is one proposal's outcome in a window's answer: the
// status and body the proposal would have had as a create of its own
// (201 and {"task"}, 409 and the flat conflict, 422 and {"error"}).
type WindowEntry struct {
	ProposalID string          `json:"proposal_id"`
	Status     int64           `json:"status"`
	Body       json.RawMessage `json:"body"`
}

// Task is the task a 201 entry created (nil for any other).
func (e WindowEntry) Task() *Task {
	if e.Status != 201 {
		return nil
	}
	var r TaskResult
	if json.Unmarshal(e.Body, &r) != nil {
		return nil
	}
	return &r.Task
}

// Err is the error of an entry that created nothing: an
// *AllocationConflictError for a 409, the *errs.Error of a 422.
func (e WindowEntry) Err() error {
	if e.Status >= 200 && e.Status < 300 {
		return nil
	}
	return decodeError(int(e.Status), e.Body)
}

// Winner is the JSON form of allocation.Winner.
type Winner struct {
	Type   string   `json:"type"`
	ID     WinnerID `json:"id"`
	Status string   `json:"status,omitempty"`
}

// ConflictKey is the JSON form of allocation.ConflictKey.
type ConflictKey struct {
	Kind         string `json:"kind"`
	Target       string `json:"target"`
	DeliveryMode string `json:"delivery_mode"`
}

// WinnerID is a winner's id: a task number, or the string id of an
// outside winner. It is a JSON number or string on the wire.
type WinnerID struct {
	Num uint64
	Str string
}

// String is the id as text.
func (w WinnerID) String() string {
	if w.Str != "" {
		return w.Str
	}
	return strconv.FormatUint(w.Num, 10)
}

// MarshalJSON writes a string id as a string, a number as a number.
func (w WinnerID) MarshalJSON() ([]byte, error) {
	if w.Str != "" {
		return json.Marshal(w.Str)
	}
	return []byte(strconv.FormatUint(w.Num, 10)), nil
}

// UnmarshalJSON reads a number or a non-empty string.
func (w *WinnerID) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if s == "" {
			return errors.New("winner id: empty string")
		}
		*w = WinnerID{Str: s}
		return nil
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("winner id: want a non-negative integer or a string, not %s", b)
	}
	*w = WinnerID{Num: n}
	return nil
}
