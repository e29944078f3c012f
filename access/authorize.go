package access

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// checkedFrom is the version of principal_put from which the cluster
// checks, inside Apply, the principal every command carries against the
// table (authorize). A cluster enables it once every member serves it.
const checkedFrom = 2

// authorize is the module's fsm.Module.Authorize. A node authenticates a
// request against the table as of its own last applied entry, stamps the
// principal it found (id, tenants, roles) into the command and forwards
// it; the leader proposes it as stamped. A node that lags behind a
// removal or a cut of tenants or roles, or a follower that a partition
// keeps behind, would so still act for a principal the log has already
// taken that authority from. Here the command meets the table as of its
// own log position, the same on every replica: the principal must be in
// the table, and hold every tenant and role the command carries
// (forbidden otherwise). Nothing is checked while the cluster holds no
// table (the nodes' --principals files are in force then), nor below
// checkedFrom.
//
// The credential that authenticated the principal is not in the log
// (identity.Principal.Cred): the leader holds a forwarded command's
// against the registry this module's table makes (cluster's
// checkForwardedCredential), before it proposes the command.
func authorize(tx *fsm.Tx) error { return meetTable(tx, tx.Principal) }

// authorizeRead is the module's fsm.Module.AuthorizeRead: the same check
// for a linearizable read, on the leader, often for a follower that
// authenticated its caller with the table it has applied; there the
// principal also meets its credential (identity.Principal.Cred), which
// must still be one of the principal's. A removed principal, one whose
// tenants or roles were cut, or a token rotated away or a certificate
// taken off, reads no more through a lagging node.
func authorizeRead(rt *fsm.ReadTx) error { return meetTable(rt, rt.Principal) }

// tableView is what meetTable reads: a command's transaction, or the
// state a query reads.
type tableView interface {
	EnabledVersion(t log.Type) uint16
	FirstString(table, index, value string) (any, error)
}

func meetTable(tx tableView, p identity.Principal) error {
	if tx.EnabledVersion(CmdPut) < checkedFrom {
		return nil
	}
	src, err := tx.FirstString(tableSource, "id", sourceRowID)
	if err != nil {
		return errs.Errorf(errs.CodeInternal, "read principals source: %v", err)
	}
	if src == nil {
		return nil
	}
	raw, err := tx.FirstString(tablePrincipals, "id", p.ID)
	if err != nil {
		return errs.Errorf(errs.CodeInternal, "read principal %q: %v", p.ID, err)
	}
	if raw == nil {
		return errs.Errorf(errs.CodeForbidden, "principal %q is not in the cluster's principal table (removed after the node that took the request authenticated it)", p.ID)
	}
	row := raw.(*principalRow)
	if p.Cred != "" && !identity.CredIn(p.Cred, row.TokenSHA256, row.CertSHA256) {
		return errs.Errorf(errs.CodeForbidden, "principal %q no longer holds the credential the request was authenticated with (rotated or removed after the node that took the request authenticated it)", p.ID)
	}
	now := identity.Principal{ID: p.ID, Tenants: row.Tenants, Roles: row.Roles}
	for _, role := range p.Roles {
		if !now.HasRole(role) {
			return errs.Errorf(errs.CodeForbidden, "principal %q no longer holds role %q (changed after the node that took the request authenticated it)", p.ID, role)
		}
	}
	for _, tenant := range p.Tenants {
		if tenant == "*" && !fsm.InEveryTenant(now) || tenant != "*" && !now.InTenant(tenant) {
			return errs.Errorf(errs.CodeForbidden, "principal %q no longer acts for tenant %q (changed after the node that took the request authenticated it)", p.ID, tenant)
		}
	}
	return nil
}
