package allocation

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// The steward's acts on duplicates (spec section 5): supersede retires a
// leftover in favour of the task that survives, attributed and never
// deleted; a steward hold keeps a finished task from being reopened.

// supersedeCmd is the payload of CmdSupersede.
type supersedeCmd struct {
	Space         string `msgpack:"space"`
	TaskID        uint64 `msgpack:"task_id"`
	SurvivingTask uint64 `msgpack:"surviving_task"`
	Reason        string `msgpack:"reason"`
}

// applySupersede retires a duplicate in favour of a surviving task
// (controller role: the steward's act, attributed to its principal; no
// delete). The superseded task leaves the live statuses, so its key is
// freed if it held one; the survivor keeps whatever it holds.
func applySupersede(tx *fsm.Tx, cmd *log.Command) (any, error) {
	var c supersedeCmd
	if err := fsm.DecodePayload(cmd.Payload, &c); err != nil {
		return nil, err
	}
	if err := checkSlug(c.Space); err != nil {
		return nil, err
	}
	if err := bounds.Identifier("reason", c.Reason); err != nil {
		return nil, err
	}
	if len(c.Reason) > MaxReasonBytes {
		return nil, errs.Errorf(errs.CodeInvalid, "reason is %d bytes, more than %d", len(c.Reason), MaxReasonBytes)
	}
	if c.SurvivingTask == c.TaskID {
		return nil, errs.New(errs.CodeInvalid, "a task cannot supersede itself")
	}
	sp, err := spaceFor(tx, tx.Principal, c.Space, log.RoleController)
	if err != nil {
		return nil, err
	}
	t, err := getTask(tx, sp.Slug, c.TaskID)
	if err != nil {
		return nil, err
	}
	if t.Status == StatusSuperseded {
		return &Outcome{Conflict: superseded(t)}, nil
	}
	survivor, err := getTask(tx, sp.Slug, c.SurvivingTask)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "surviving_task: %v", errs.From(err).Message)
	}
	if survivor.Status == StatusSuperseded {
		return nil, errs.Errorf(errs.CodeConflict, "surviving task %d is itself superseded by task %d", survivor.ID, *survivor.SupersededBy)
	}
	if Live(t.Status) {
		if err := vacate(tx, sp.Slug, t.ConflictKey, WinnerTask, NumID(t.ID)); err != nil {
			return nil, err
		}
	}
	n := *t
	by := survivor.ID
	n.Status, n.Version, n.UpdatedAtMs = StatusSuperseded, t.Version+1, tx.Now
	n.SupersededBy, n.Reason, n.SupersededByPrincipal, n.SupersededAtMs = &by, c.Reason, principalID(tx.Principal), tx.Now
	if err := putTask(tx, &n, "allocation_task_superseded", sp.Space.TenantRef); err != nil {
		return nil, err
	}
	return &Outcome{Task: &n}, nil
}

// holdCmd is the payload of CmdHold.
type holdCmd struct {
	Space  string `msgpack:"space"`
	TaskID uint64 `msgpack:"task_id"`
	Hold   bool   `msgpack:"hold"`
}

// applyHold sets or clears a task's steward hold (controller role). A
// held task cannot be reopened.
func applyHold(tx *fsm.Tx, cmd *log.Command) (any, error) {
	var c holdCmd
	if err := fsm.DecodePayload(cmd.Payload, &c); err != nil {
		return nil, err
	}
	if err := checkSlug(c.Space); err != nil {
		return nil, err
	}
	sp, err := spaceFor(tx, tx.Principal, c.Space, log.RoleController)
	if err != nil {
		return nil, err
	}
	t, err := getTask(tx, sp.Slug, c.TaskID)
	if err != nil {
		return nil, err
	}
	if t.Status == StatusSuperseded {
		return &Outcome{Conflict: superseded(t)}, nil
	}
	if t.StewardHold == c.Hold {
		out := *t
		return &Outcome{Task: &out}, nil
	}
	n := *t
	n.StewardHold, n.Version, n.UpdatedAtMs = c.Hold, t.Version+1, tx.Now
	if err := putTask(tx, &n, "allocation_task_hold", sp.Space.TenantRef); err != nil {
		return nil, err
	}
	return &Outcome{Task: &n}, nil
}
