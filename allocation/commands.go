package allocation

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// The commands' payloads, access and prologues, declared once each as an
// fsm.Typed (fsm.Handle runs decode, validate, checks, access, body, in
// that order: the order decides which error a bad command gets, and
// TestAnswersPinned holds it). A command in a space is a spaceCommand:
// the role it needs is checked before the space is read, and its body
// reads the space with spaceIn, which checks the space's tenant. The
// bodies are the apply functions.

// putSpaceCommand: the access of a put depends on the space it would
// replace (its tenant, or the slug for a new space) and comes after the
// catalog's normalization (version 1 judged them in this order), so the
// body checks it (checkAccess); the prologue is the slug and the
// version of adhoc_slots.
func putSpaceCommand() fsm.Typed[putSpaceCmd] {
	return fsm.Typed[putSpaceCmd]{
		Validate: func(c *putSpaceCmd) error { return checkSlug(c.Slug) },
		Checks: []func(*fsm.Tx, *log.Command, *putSpaceCmd) error{func(tx *fsm.Tx, _ *log.Command, c *putSpaceCmd) error {
			if tx.EnabledVersion(CmdPutSpace) < 2 && c.AdHocSlots {
				return errs.New(errs.CodeInvalid, "adhoc_slots needs allocation_put_space version 2, which the cluster has not enabled")
			}
			return nil
		}},
		Apply: applyPutSpace,
	}
}

// createTaskCommand: members; version 1 judged the title before the
// Idempotency-Key.
func createTaskCommand() fsm.Typed[createCmd] {
	t := spaceCommand(identity.RoleMember, (*createCmd).validateShape, applyCreateTask)
	t.Checks = []func(*fsm.Tx, *log.Command, *createCmd) error{func(tx *fsm.Tx, _ *log.Command, c *createCmd) error {
		if v := tx.EnabledVersion(CmdCreateTask); v < 2 {
			return c.Intent.validate(v)
		}
		return nil
	}}
	return t
}

func windowCommand() fsm.Typed[windowCmd] {
	return spaceCommand(identity.RoleMember, (*windowCmd).validate, applyWindow)
}

// reserveCommand: members; version 1 judged the intent before the
// proposal was looked up.
func reserveCommand() fsm.Typed[reserveCmd] {
	t := spaceCommand(identity.RoleMember, (*reserveCmd).validateShape, applyReserve)
	t.Checks = []func(*fsm.Tx, *log.Command, *reserveCmd) error{func(tx *fsm.Tx, _ *log.Command, c *reserveCmd) error {
		if v := tx.EnabledVersion(CmdReserve); v < 2 {
			return c.Intent.validate(v)
		}
		return nil
	}}
	return t
}

func commitCommand() fsm.Typed[reservationCmd] {
	return spaceCommand(identity.RoleMember, (*reservationCmd).validateCommit, applyCommit)
}

func abortCommand() fsm.Typed[reservationCmd] {
	return spaceCommand(identity.RoleMember, (*reservationCmd).validate, applyAbort)
}

func releaseCommand() fsm.Typed[reservationCmd] {
	return spaceCommand(identity.RoleMember, (*reservationCmd).validate, applyRelease)
}

func transitionCommand() fsm.Typed[transitionCmd] {
	return spaceCommand(identity.RoleMember, (*transitionCmd).validate, applyTransition)
}

func supersedeCommand() fsm.Typed[supersedeCmd] {
	return spaceCommand(identity.RoleController, (*supersedeCmd).validate, applySupersede)
}

func holdCommand() fsm.Typed[holdCmd] {
	return spaceCommand(identity.RoleController, (*holdCmd).validate, applyHold)
}

func postNoteCommand() fsm.Typed[noteCmd] {
	return spaceCommand(identity.RoleMember, (*noteCmd).validate, applyPostNote)
}
