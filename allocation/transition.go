package allocation

import (
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// Transition actions.
const (
	ActionClaim    = "claim"
	ActionAssign   = "assign"
	ActionSubmit   = "submit"
	ActionReview   = "review"
	ActionDone     = "done"
	ActionReject   = "reject"
	ActionWithdraw = "withdraw"
	ActionReopen   = "reopen"
)

// transitions is the task lifecycle: each action, the statuses it may
// start from and the status it leads to.
var transitions = map[string]struct {
	from []string
	to   string
}{
	ActionClaim:    {[]string{StatusOpen}, StatusClaimed},
	ActionAssign:   {[]string{StatusOpen, StatusClaimed}, StatusAssigned},
	ActionSubmit:   {[]string{StatusClaimed, StatusAssigned}, StatusInReview},
	ActionReview:   {[]string{StatusInReview}, StatusInReview}, // records the reviewer
	ActionDone:     {[]string{StatusClaimed, StatusAssigned, StatusInReview}, StatusDone},
	ActionReject:   {[]string{StatusOpen, StatusClaimed, StatusAssigned, StatusInReview}, StatusRejected},
	ActionWithdraw: {[]string{StatusOpen, StatusClaimed, StatusAssigned, StatusInReview}, StatusWithdrawn},
	ActionReopen:   {[]string{StatusDone, StatusRejected, StatusWithdrawn}, StatusOpen},
}

// transitionCmd is the payload of CmdTransition.
type transitionCmd struct {
	Space           string  `msgpack:"space"`
	TaskID          uint64  `msgpack:"task_id"`
	Action          string  `msgpack:"action"`
	ExpectedVersion *uint64 `msgpack:"expected_version"`
	Assignee        string  `msgpack:"assignee"`
}

func (c *transitionCmd) validate() error {
	if err := checkSlug(c.Space); err != nil {
		return err
	}
	if _, ok := transitions[c.Action]; !ok {
		return errs.Errorf(errs.CodeInvalid, "action %q: want claim, assign, submit, review, done, reject, withdraw or reopen", clip(c.Action))
	}
	if c.Assignee != "" && c.Action != ActionAssign {
		return errs.New(errs.CodeInvalid, "assignee is for the assign action only")
	}
	return bounds.OptionalIdentifier("assignee", c.Assignee)
}

// applyTransition moves a task along its lifecycle. A task that leaves
// the live statuses frees its keys (from version 2 on not while a
// steward hold is on it); reopen takes them again, so it answers the
// flat 409 when another occupant holds its own key, and refuses a task
// under steward hold. From version 2 on reopen first rebinds a task
// whose client named no work item against the space's catalog of now.
// Every action on a superseded task answers 409 task_superseded.
func applyTransition(tx *fsm.Tx, _ *log.Command, c *transitionCmd) (any, error) {
	sp, err := spaceIn(tx, tx.Principal, c.Space, identity.RoleMember)
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
	if c.ExpectedVersion != nil && *c.ExpectedVersion != t.Version {
		return nil, errs.Errorf(errs.CodeConflict, "task %d is at version %d, not %d", t.ID, t.Version, *c.ExpectedVersion)
	}
	rule := transitions[c.Action]
	if !slices.Contains(rule.from, t.Status) {
		return nil, errs.Errorf(errs.CodeConflict, "task %d is %s: %s needs one of %v", t.ID, t.Status, c.Action, rule.from)
	}
	v2 := tx.EnabledVersion(CmdTransition) >= 2
	n := *t
	n.Status, n.Version, n.UpdatedAtMs = rule.to, t.Version+1, tx.Now
	if c.Action == ActionReopen {
		if t.StewardHold {
			return nil, errs.Errorf(errs.CodeConflict, "task %d is under steward hold and cannot be reopened", t.ID)
		}
		if v2 {
			rebind(sp, &n)
		}
		if o, err := liveOccupant(tx, sp.Slug, n.ConflictKey, tx.Now); err != nil {
			return nil, err
		} else if o != nil {
			cf, err := conflictOf(tx, o)
			if err != nil {
				return nil, err
			}
			return &Outcome{Conflict: cf}, nil
		}
		if err := takeKeys(tx, &n); err != nil {
			return nil, err
		}
	}
	switch c.Action {
	case ActionClaim:
		n.Assignee = principalID(tx.Principal)
	case ActionAssign:
		n.Assignee = c.Assignee
		if n.Assignee == "" {
			n.Assignee = principalID(tx.Principal)
		}
	case ActionReview:
		n.Reviewer = principalID(tx.Principal)
	}
	if wantsKeys(t, v2) && !wantsKeys(&n, v2) {
		if err := releaseKeys(tx, t); err != nil {
			return nil, err
		}
	}
	if err := putTask(tx, &n, "allocation_task_"+c.Action, sp.Space.TenantRef); err != nil {
		return nil, err
	}
	return &Outcome{Task: &n}, nil
}
