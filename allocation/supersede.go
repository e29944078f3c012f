package allocation

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
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

func (c *supersedeCmd) validate() error {
	if err := checkSlug(c.Space); err != nil {
		return err
	}
	if err := bounds.Identifier("reason", c.Reason); err != nil {
		return err
	}
	if len(c.Reason) > MaxReasonBytes {
		return errs.Errorf(errs.CodeInvalid, "reason is %d bytes, more than %d", len(c.Reason), MaxReasonBytes)
	}
	if c.SurvivingTask == c.TaskID {
		return errs.New(errs.CodeInvalid, "a task cannot supersede itself")
	}
	return nil
}

func (c *holdCmd) validate() error { return checkSlug(c.Space) }

// applySupersede retires a duplicate in favour of a surviving task
// (controller role: the steward's act, attributed to its principal; no
// delete). From version 2 on occupancy stays on the survivor: it
// inherits the superseded task's keys (its own and those it inherited),
// takes the ones it held or that are free while it wants keys, and a
// create on one is 409 naming the survivor; version 1 freed the key.
func applySupersede(tx *fsm.Tx, _ *log.Command, c *supersedeCmd) (any, error) {
	sp, err := spaceIn(tx, tx.Principal, c.Space, identity.RoleController)
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
	if tx.EnabledVersion(CmdSupersede) >= 2 {
		s, err := inherit(t, survivor)
		if err != nil {
			return nil, err
		}
		if err := passKeys(tx, t, s); err != nil {
			return nil, err
		}
		if len(s.InheritedKeys) != len(survivor.InheritedKeys) {
			s.Version, s.UpdatedAtMs = survivor.Version+1, tx.Now
			if err := putTask(tx, s, "allocation_task_inherited", sp.Space.TenantRef); err != nil {
				return nil, err
			}
		}
	} else if Live(t.Status) {
		if err := releaseKeys(tx, t); err != nil {
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
// held task cannot be reopened, and from version 2 on it keeps its keys
// when it finishes: a hold set on a finished task takes them again if
// they are free (a duplicate if another holds its own), a hold released
// from a finished task frees them.
func applyHold(tx *fsm.Tx, _ *log.Command, c *holdCmd) (any, error) {
	sp, err := spaceIn(tx, tx.Principal, c.Space, identity.RoleController)
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
	v2 := tx.EnabledVersion(CmdHold) >= 2
	if t.StewardHold == c.Hold {
		if v2 && c.Hold { // a hold set again takes what of its keys is free
			if err := takeKeys(tx, t); err != nil {
				return nil, err
			}
		}
		out := *t
		return &Outcome{Task: &out}, nil
	}
	n := *t
	n.StewardHold, n.Version, n.UpdatedAtMs = c.Hold, t.Version+1, tx.Now
	if v2 {
		switch before, after := wantsKeys(t, true), wantsKeys(&n, true); {
		case !before && after:
			if err := takeKeys(tx, &n); err != nil {
				return nil, err
			}
		case before && !after:
			if err := releaseKeys(tx, t); err != nil {
				return nil, err
			}
		}
	}
	if err := putTask(tx, &n, "allocation_task_hold", sp.Space.TenantRef); err != nil {
		return nil, err
	}
	return &Outcome{Task: &n}, nil
}
