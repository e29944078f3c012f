package allocation

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/arbiterhq/arbiter/errs"
)

// Conflict key kinds.
const (
	KindCreateTask     = "create_task"
	KindPostReviewNote = "post_review_note"
)

// Task statuses. The first four occupy their conflict key.
const (
	StatusOpen       = "open"
	StatusClaimed    = "claimed"
	StatusAssigned   = "assigned"
	StatusInReview   = "in_review"
	StatusDone       = "done"
	StatusRejected   = "rejected"
	StatusWithdrawn  = "withdrawn"
	StatusSuperseded = "superseded"
)

// Statuses lists every task status.
var Statuses = []string{StatusOpen, StatusClaimed, StatusAssigned, StatusInReview, StatusDone, StatusRejected, StatusWithdrawn, StatusSuperseded}

// Live reports whether a task in status occupies its conflict key.
func Live(status string) bool {
	switch status {
	case StatusOpen, StatusClaimed, StatusAssigned, StatusInReview:
		return true
	}
	return false
}

// ReasonUnknownWorkItem is detail.reason of the 422 for a work_item_id
// the space's catalog does not list.
const ReasonUnknownWorkItem = "unknown_work_item"

// Winner types besides the external ones a reservation commit names.
const (
	WinnerTask           = "task"
	WinnerNote           = "note"
	WinnerReservedIntent = "reserved_intent"
)

// ConflictKey is (kind, target, delivery_mode): two intents conflict iff
// all three are equal.
type ConflictKey struct {
	Kind         string `json:"kind" msgpack:"kind"`
	Target       string `json:"target" msgpack:"target"`
	DeliveryMode string `json:"delivery_mode" msgpack:"delivery_mode"`
}

// CatalogRow is one work item of a space's charter catalog.
type CatalogRow struct {
	WorkItemID     string   `json:"work_item_id" msgpack:"work_item_id"`
	CanonicalTitle string   `json:"canonical_title" msgpack:"canonical_title"`
	Aliases        []string `json:"aliases" msgpack:"aliases"`
}

// Space is a space's configuration as stored.
type Space struct {
	Slug          string       `json:"slug" msgpack:"slug"`
	TenantRef     string       `json:"tenant_ref" msgpack:"tenant_ref"`
	Catalog       []CatalogRow `json:"catalog" msgpack:"catalog"`
	DeliveryModes []string     `json:"delivery_modes" msgpack:"delivery_modes"`
	WindowMs      int64        `json:"window_ms" msgpack:"window_ms"`
	// AdHocSlots: a work_item_id the catalog does not list still forms
	// a slot key (from put version 2 on; otherwise such a create is 422
	// unknown_work_item).
	AdHocSlots  bool   `json:"adhoc_slots" msgpack:"adhoc_slots,omitempty"`
	Version     uint64 `json:"version" msgpack:"version"`
	UpdatedBy   string `json:"updated_by" msgpack:"updated_by"`
	UpdatedAtMs int64  `json:"updated_at_ms" msgpack:"updated_at_ms"`
}

// Task is one task of a space.
type Task struct {
	ID          uint64      `json:"id" msgpack:"id"`
	Space       string      `json:"space" msgpack:"space"`
	Title       string      `json:"title" msgpack:"title"`
	Status      string      `json:"status" msgpack:"status"`
	WorkItemID  *string     `json:"work_item_id" msgpack:"work_item_id"` // bound or given; null for the title fallback
	ConflictKey ConflictKey `json:"conflict_key" msgpack:"conflict_key"`
	CreatedBy   string      `json:"created_by" msgpack:"created_by"`
	Version     uint64      `json:"version" msgpack:"version"`
	CreatedAtMs int64       `json:"created_at_ms" msgpack:"created_at_ms"`
	UpdatedAtMs int64       `json:"updated_at_ms" msgpack:"updated_at_ms"`
	// WorkItemGiven says the client named the work item (provenance);
	// false when the charter-index bind chose it.
	WorkItemGiven bool   `json:"work_item_given" msgpack:"work_item_given"`
	StewardHold   bool   `json:"steward_hold" msgpack:"steward_hold"`
	Assignee      string `json:"assignee,omitempty" msgpack:"assignee"`
	Reviewer      string `json:"reviewer,omitempty" msgpack:"reviewer"`
	// InheritedKeys are the keys of the tasks superseded into this one
	// (version 2): it holds them, with its own, while it holds keys.
	InheritedKeys []ConflictKey `json:"inherited_keys,omitempty" msgpack:"inherited_keys,omitempty"`
	// CreatedAs is the key and work item the task was created with, once
	// a rebind (version 2: a catalog change, a reopen) changed them; the
	// replay of its create answers them.
	CreatedAs *CreatedAs `json:"-" msgpack:"created_as,omitempty"`
	// Supersession: who, why, in favour of which task, when.
	SupersededBy          *uint64 `json:"superseded_by,omitempty" msgpack:"superseded_by"`
	Reason                string  `json:"reason,omitempty" msgpack:"reason"`
	SupersededByPrincipal string  `json:"superseded_by_principal,omitempty" msgpack:"superseded_by_principal"`
	SupersededAtMs        int64   `json:"superseded_at_ms,omitempty" msgpack:"superseded_at_ms"`
}

// CreatedAs is what a task was created with.
type CreatedAs struct {
	ConflictKey ConflictKey `msgpack:"conflict_key"`
	WorkItemID  *string     `msgpack:"work_item_id"`
}

// Note is a post-review note on a task.
type Note struct {
	ID             uint64      `json:"id" msgpack:"id"`
	Space          string      `json:"space" msgpack:"space"`
	TaskID         uint64      `json:"task_id" msgpack:"task_id"`
	CriterionIndex *int64      `json:"criterion_index" msgpack:"criterion_index"`
	Principal      string      `json:"principal" msgpack:"principal"`
	ConflictKey    ConflictKey `json:"conflict_key" msgpack:"conflict_key"`
	Body           string      `json:"body" msgpack:"body"`
	CreatedAtMs    int64       `json:"created_at_ms" msgpack:"created_at_ms"`
}

// Reservation is a live (or committed) hold of a conflict key by a
// proposal of an external host (reserve-then-mutate).
type Reservation struct {
	ProposalID  string      `json:"proposal_id" msgpack:"proposal_id"`
	ConflictKey ConflictKey `json:"conflict_key" msgpack:"conflict_key"`
	ExpiresAtMs int64       `json:"expires_at_ms" msgpack:"expires_at_ms"`
	WorkItemID  *string     `json:"work_item_id" msgpack:"work_item_id"`
	Principal   string      `json:"principal" msgpack:"principal"`
	State       string      `json:"state" msgpack:"state"` // reserved | committed
	Winner      *Winner     `json:"winner,omitempty" msgpack:"winner"`
}

// Reservation states.
const (
	ReservationReserved  = "reserved"
	ReservationCommitted = "committed"
)

// Occupancy is what holds a conflict key.
type Occupancy struct {
	ConflictKey ConflictKey `json:"conflict_key" msgpack:"conflict_key"`
	Winner      Winner      `json:"winner" msgpack:"winner"`
	ProposalID  string      `json:"proposal_id,omitempty" msgpack:"proposal_id"`
	// ExpiresAtMs is set while the holder is a reservation.
	ExpiresAtMs int64 `json:"expires_at_ms,omitempty" msgpack:"expires_at_ms"`
}

// Winner names what holds a key: a task, a note, a reserved intent (the
// proposal id) or the external object a reservation was committed to.
type Winner struct {
	Type   string   `json:"type" msgpack:"type"`
	ID     WinnerID `json:"id" msgpack:"id"`
	Status string   `json:"status,omitempty" msgpack:"status"` // a task's status
}

// WinnerID is an integer (tasks, notes, or an external integer id) or a
// string (a proposal id, an external string id); JSON keeps the kind.
type WinnerID struct {
	Num uint64 `msgpack:"num"`
	Str string `msgpack:"str"` // set: the id is this string
}

// NumID and StrID build winner ids.
func NumID(n uint64) WinnerID { return WinnerID{Num: n} }
func StrID(s string) WinnerID { return WinnerID{Str: s} }

func (w WinnerID) String() string {
	if w.Str != "" {
		return w.Str
	}
	return strconv.FormatUint(w.Num, 10)
}

func (w WinnerID) MarshalJSON() ([]byte, error) {
	if w.Str != "" {
		return json.Marshal(w.Str)
	}
	return []byte(strconv.FormatUint(w.Num, 10)), nil
}

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

// Conflict is the flat 409 body of the spec (section 4): a loser of a
// conflict key, or an action on a superseded task. It is an error:
// errors.Is(c, errs.Conflict) holds.
type Conflict struct {
	Err                string       `json:"error" msgpack:"error"` // allocation_conflict | task_superseded
	Code               string       `json:"code,omitempty" msgpack:"code"`
	ConflictKey        *ConflictKey `json:"conflict_key,omitempty" msgpack:"conflict_key"`
	Outcome            string       `json:"outcome,omitempty" msgpack:"outcome"`
	Winner             *Winner      `json:"winner,omitempty" msgpack:"winner"`
	ReservedProposalID string       `json:"reserved_proposal_id,omitempty" msgpack:"reserved_proposal_id"`
	RetryAfterMs       int64        `json:"retry_after_ms,omitempty" msgpack:"retry_after_ms"`
	SupersededBy       uint64       `json:"superseded_by,omitempty" msgpack:"superseded_by"`
	WriteOccurred      bool         `json:"write_occurred" msgpack:"write_occurred"`
}

// The flat body's words.
const (
	ErrAllocationConflict = "allocation_conflict"
	ErrTaskSuperseded     = "task_superseded"
	CodeKeyOccupied       = "conflict_key_occupied"
	CodeKeyReserved       = "conflict_key_reserved"
	OutcomeRedirect       = "redirect"
	OutcomeIdle           = "idle"
	// RetryAfterMs is what a loser to a live reservation is told to wait.
	RetryAfterMs = 200
)

func (c *Conflict) Error() string {
	if c.Err == ErrTaskSuperseded {
		return fmt.Sprintf("task_superseded: superseded by task %d", c.SupersededBy)
	}
	if c.Winner != nil && c.ConflictKey != nil {
		return fmt.Sprintf("allocation_conflict: %s: %s holds %s/%s/%s", c.Code, c.Winner.Type+" "+c.Winner.ID.String(),
			c.ConflictKey.Kind, c.ConflictKey.Target, c.ConflictKey.DeliveryMode)
	}
	return c.Err
}

// ErrCode makes a Conflict an errs.Coded error: errs.CodeOf says
// conflict and errs.Status 409, as errors.Is(c, errs.Conflict) does.
func (c *Conflict) ErrCode() errs.Code { return errs.CodeConflict }

// Is makes errors.Is(c, errs.Conflict) hold.
func (c *Conflict) Is(target error) bool { return errs.MatchesCode(target, c.ErrCode()) }
