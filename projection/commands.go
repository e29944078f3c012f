package projection

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// The commands' payloads, access and prologues, declared once each as an
// fsm.Typed (fsm.Handle runs decode, validate, checks, access, body, in
// that order: the order decides which error a bad command gets, and
// TestAnswersPinned holds it). Configuring is the admins'; a target is
// registered by its agent. Who may submit, acquire, publish or release
// depends on the stored target and lease (the channel's producer, the
// lease's token), read after the target is found, so those bodies check
// it themselves.

func setConfigCommand() fsm.Typed[setConfigCmd] {
	return fsm.Typed[setConfigCmd]{
		Validate: func(c *setConfigCmd) error { return checkLeaseTTL(c.LeaseTTLMs) },
		Role:     identity.RoleAdmin,
		Forbidden: func(p identity.Principal, _ *setConfigCmd) error {
			return errs.Errorf(errs.CodeForbidden, "principal %q may not configure projections (admin only)", p.ID)
		},
		Apply: applySetConfig,
	}
}

func registerTargetCommand() fsm.Typed[registerCmd] {
	return fsm.Typed[registerCmd]{
		Validate: (*registerCmd).validate,
		Access: func(tx *fsm.Tx, c *registerCmd) error {
			if p := tx.Principal; !p.Trusted() && (p.ID != c.AgentID || !p.HasRole(identity.RoleMember)) {
				return errs.Errorf(errs.CodeForbidden, "principal %q may register targets only for itself, with role member or above", p.ID)
			}
			return nil
		},
		Apply: applyRegisterTarget,
	}
}

// validated is a command whose prologue is its payload's rule alone.
func validated[P any](validate func(*P) error, apply func(*fsm.Tx, *log.Command, *P) (any, error)) fsm.Typed[P] {
	return fsm.Typed[P]{Validate: validate, Apply: apply}
}
