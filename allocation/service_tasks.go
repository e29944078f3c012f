package allocation

import (
	"context"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// TransitionRequest is the body of .../tasks/{id}/transition.
type TransitionRequest struct {
	Action          string  `json:"action"`
	ExpectedVersion *uint64 `json:"expected_version,omitempty"`
	// Assignee is whom assign assigns (default: the caller).
	Assignee string `json:"assignee,omitempty"`
}

// Transition moves a task along its lifecycle (see the package doc).
func (s *Service) Transition(ctx context.Context, slug string, id uint64, req TransitionRequest) (*TaskResult, error) {
	c := transitionCmd{Space: slug, TaskID: id, Action: req.Action, ExpectedVersion: req.ExpectedVersion, Assignee: req.Assignee}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return s.taskCommand(ctx, CmdTransition, c)
}

// SupersedeRequest is the body of .../tasks/{id}/supersede.
type SupersedeRequest struct {
	SurvivingTask uint64 `json:"surviving_task"`
	Reason        string `json:"reason"`
}

// Supersede retires task id in favour of the surviving task (controller).
func (s *Service) Supersede(ctx context.Context, slug string, id uint64, req SupersedeRequest) (*TaskResult, error) {
	if err := checkSlug(slug); err != nil {
		return nil, err
	}
	return s.taskCommand(ctx, CmdSupersede, supersedeCmd{Space: slug, TaskID: id, SurvivingTask: req.SurvivingTask, Reason: req.Reason})
}

// HoldRequest is the body of .../tasks/{id}/hold.
type HoldRequest struct {
	Hold bool `json:"hold"`
}

// Hold sets or clears a task's steward hold (controller).
func (s *Service) Hold(ctx context.Context, slug string, id uint64, req HoldRequest) (*TaskResult, error) {
	if err := checkSlug(slug); err != nil {
		return nil, err
	}
	return s.taskCommand(ctx, CmdHold, holdCmd{Space: slug, TaskID: id, Hold: req.Hold})
}

func (s *Service) taskCommand(ctx context.Context, t log.Type, payload any) (*TaskResult, error) {
	var out Outcome
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: t}, payload, &out); err != nil {
		return nil, err
	}
	if out.Conflict != nil {
		return nil, out.Conflict
	}
	if out.Task == nil {
		return nil, errs.New(errs.CodeInternal, "answered neither a task nor a conflict")
	}
	return &TaskResult{Task: *out.Task}, nil
}

// NoteRequest is the body of POST .../tasks/{id}/notes; the
// Idempotency-Key header fills IdempotencyKey.
type NoteRequest struct {
	Kind           string `json:"kind"`
	CriterionIndex *int64 `json:"criterion_index"`
	Body           string `json:"body"`
	DeliveryMode   string `json:"delivery_mode"`
	IdempotencyKey string `json:"-"`
}

// PostNote posts a note on a task, or returns the *Conflict naming the
// note that holds its key.
func (s *Service) PostNote(ctx context.Context, slug string, taskID uint64, req NoteRequest) (*NoteResult, error) {
	c := noteCmd{Space: slug, TaskID: taskID, Kind: req.Kind, CriterionIndex: req.CriterionIndex, Body: req.Body,
		DeliveryMode: req.DeliveryMode, IdempotencyKey: req.IdempotencyKey}
	if err := c.validate(); err != nil {
		return nil, err
	}
	var out Outcome
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdPostNote}, c, &out); err != nil {
		return nil, err
	}
	if out.Conflict != nil {
		return nil, out.Conflict
	}
	if out.Note == nil {
		return nil, errs.New(errs.CodeInternal, "note answered neither a note nor a conflict")
	}
	return &NoteResult{Note: *out.Note, Replayed: out.Replayed}, nil
}

// GetTask reads one task.
func (s *Service) GetTask(ctx context.Context, slug string, id uint64, cons fsm.Consistency) (*TaskResult, error) {
	if err := checkSlug(slug); err != nil {
		return nil, err
	}
	var out TaskResult
	if err := fsm.Ask(ctx, s.r, QueryTask, cons == fsm.Stale, taskQuery{Slug: slug, TaskID: id}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListRequest pages tasks: Status filters ("" all but superseded, unless
// IncludeSuperseded), After is a NextCursor, Limit 1..128 (0: 128).
type ListRequest struct {
	Status            string
	IncludeSuperseded bool
	After             string
	Limit             int
}

// ListTasks reads a page of a space's tasks by id.
func (s *Service) ListTasks(ctx context.Context, slug string, req ListRequest, cons fsm.Consistency) (*TaskPage, error) {
	if req.Limit == 0 {
		req.Limit = MaxPage
	}
	q := tasksQuery{Slug: slug, Status: req.Status, IncludeSuperseded: req.IncludeSuperseded, Cursor: req.After, Limit: req.Limit}
	if err := checkSlug(slug); err != nil {
		return nil, err
	}
	if err := q.validate(); err != nil {
		return nil, err
	}
	var out TaskPage
	if err := fsm.Ask(ctx, s.r, QueryTasks, cons == fsm.Stale, q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListNotes reads a page of a task's notes by id.
func (s *Service) ListNotes(ctx context.Context, slug string, taskID uint64, after string, limit int, cons fsm.Consistency) (*NotePage, error) {
	if limit == 0 {
		limit = MaxPage
	}
	if err := checkSlug(slug); err != nil {
		return nil, err
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	var out NotePage
	if err := fsm.Ask(ctx, s.r, QueryNotes, cons == fsm.Stale, notesQuery{Slug: slug, TaskID: taskID, Cursor: after, Limit: limit}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Require fails with unavailable, naming what is missing, unless the
// cluster behind the service enables every allocation command at the
// version this package sends.
func (s *Service) Require(ctx context.Context) error {
	return fsm.Require(ctx, s.r, fsm.ServedBy(Module()))
}
