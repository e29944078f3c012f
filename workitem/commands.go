package workitem

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// The commands' payloads, access and prologues, declared once each as an
// fsm.Typed (fsm.Handle runs decode, validate, checks, access, body, in
// that order: the order decides which error a bad command gets, and
// TestAnswersPinned holds it). The bodies are the apply functions.

// memberCommand is a command any member of the payload's tenant may send.
func memberCommand[P any](tenant func(*P) string, validate func(*P) error, apply func(*fsm.Tx, *log.Command, *P) (any, error)) fsm.Typed[P] {
	return fsm.Typed[P]{
		Validate: validate,
		Role:     identity.RoleMember,
		Tenant:   tenant,
		Forbidden: func(p identity.Principal, c *P) error {
			return errs.Errorf(errs.CodeForbidden, "principal %q may not change work items of tenant %q", p.ID, tenant(c))
		},
		Apply: apply,
	}
}

// fleetCommand is a command that changes what every tenant shares (the
// hosts): controllers of every tenant only (checkFleet).
func fleetCommand[P any](what string, validate func(*P) error, apply func(*fsm.Tx, *log.Command, *P) (any, error)) fsm.Typed[P] {
	return fsm.Typed[P]{
		Validate: validate, Role: identity.RoleController, AllTenants: true,
		Forbidden: func(p identity.Principal, _ *P) error { return checkFleet(p, what) },
		Apply:     apply,
	}
}

// submitCommand admits items: decoded within MaxPayloadBytes, validated
// by the rules of the enabled version (and, from extensionChecked on,
// each item's extension), members of the tenant.
func submitCommand() fsm.Typed[submitCmd] {
	t := memberCommand(func(c *submitCmd) string { return c.TenantRef }, nil, applySubmit)
	t.Decode = decodeBounded[submitCmd]
	t.Checks = []func(*fsm.Tx, *log.Command, *submitCmd) error{func(tx *fsm.Tx, _ *log.Command, c *submitCmd) error {
		v := tx.EnabledVersion(CmdSubmit)
		if err := c.validate(v); err != nil {
			return err
		}
		if v >= extensionChecked {
			return checkSpecExtensions([]itemSpec{c.Item}, "", rulesAt(tx, CmdSubmit, digestsChecked))
		}
		return nil
	}}
	return t
}

// submitBatchCommand is submitCommand for a batch.
func submitBatchCommand() fsm.Typed[batchCmd] {
	t := memberCommand(func(c *batchCmd) string { return c.TenantRef }, nil, applySubmitBatch)
	t.Decode = decodeBounded[batchCmd]
	t.Checks = []func(*fsm.Tx, *log.Command, *batchCmd) error{func(tx *fsm.Tx, _ *log.Command, c *batchCmd) error {
		v := tx.EnabledVersion(CmdSubmitBatch)
		if err := c.validate(v); err != nil {
			return err
		}
		if v >= extensionChecked {
			return checkSpecExtensions(c.Items, "requests[%d].", rulesAt(tx, CmdSubmitBatch, digestsChecked))
		}
		return nil
	}}
	return t
}

// decodeBounded is decode for fsm.Typed.Decode.
func decodeBounded[P any](_ *fsm.Tx, cmd *log.Command, c *P) error { return decode(cmd, c) }

func claimCommand() fsm.Typed[claimCmd] {
	return memberCommand(func(c *claimCmd) string { return c.TenantRef }, (*claimCmd).validate, applyClaim)
}

func completeCommand() fsm.Typed[completeCmd] {
	return memberCommand(func(c *completeCmd) string { return c.TenantRef }, (*completeCmd).validate, applyComplete)
}

func cancelCommand() fsm.Typed[cancelCmd] {
	return memberCommand(func(c *cancelCmd) string { return c.TenantRef }, (*cancelCmd).validate, applyCancel)
}

func reserveCommand() fsm.Typed[reserveCmd] {
	return memberCommand(func(c *reserveCmd) string { return c.TenantRef }, (*reserveCmd).validate, applyReserve)
}

func releaseCommand() fsm.Typed[releaseCmd] {
	return memberCommand(func(c *releaseCmd) string { return c.TenantRef }, (*releaseCmd).validate, applyRelease)
}

// reclaimCommand reclaims the reservations of one tenant (its members)
// or, with no tenant, of every tenant (controllers of every tenant).
func reclaimCommand() fsm.Typed[reclaimCmd] {
	return fsm.Typed[reclaimCmd]{
		Validate: (*reclaimCmd).validate,
		Access: func(tx *fsm.Tx, c *reclaimCmd) error {
			if c.TenantRef == "" {
				return checkFleet(tx.Principal, "reclaiming every tenant's reservations")
			}
			return checkMember(tx.Principal, c.TenantRef)
		},
		Apply: applyReclaim,
	}
}

func putHostCommand() fsm.Typed[hostCmd] {
	return fleetCommand("registering a host", (*hostCmd).validate, applyPutHost)
}

func telemetryCommand() fsm.Typed[telemetryCmd] {
	return fleetCommand("reporting host telemetry", (*telemetryCmd).validate, applyTelemetry)
}

// setProfilesCommand: admins of every tenant; a set from a file travels
// in version profilesV2 of the command.
func setProfilesCommand() fsm.Typed[profilesCmd] {
	return fsm.Typed[profilesCmd]{
		Validate: (*profilesCmd).validate,
		Checks: []func(*fsm.Tx, *log.Command, *profilesCmd) error{func(_ *fsm.Tx, cmd *log.Command, c *profilesCmd) error {
			if (c.Seed || c.FileVersion != 0) && cmd.Version < profilesV2 {
				return errs.Errorf(errs.CodeInvalid, "a profile set from a file travels in version %d of the command", profilesV2)
			}
			return nil
		}},
		Role: identity.RoleAdmin, AllTenants: true,
		Forbidden: func(p identity.Principal, _ *profilesCmd) error {
			return errs.Errorf(errs.CodeForbidden, "setting reservation profiles needs the admin role for every tenant; principal %q has not", p.ID)
		},
		Apply: applySetProfiles,
	}
}

// rewriteExtensionCommand: admins of the tenant; the payload is
// validated by the fingerprint rules of the enabled version.
func rewriteExtensionCommand() fsm.Typed[rewriteCmd] {
	return fsm.Typed[rewriteCmd]{
		Checks: []func(*fsm.Tx, *log.Command, *rewriteCmd) error{func(tx *fsm.Tx, _ *log.Command, c *rewriteCmd) error {
			return c.validate(rulesAt(tx, CmdRewriteExtension, rewriteSensitive))
		}},
		Role: identity.RoleAdmin, Tenant: func(c *rewriteCmd) string { return c.TenantRef },
		Forbidden: func(_ identity.Principal, c *rewriteCmd) error {
			return errs.Errorf(errs.CodeForbidden, "rewriting an extension needs the admin role in tenant %q", c.TenantRef)
		},
		Apply: applyRewriteExtension,
	}
}
