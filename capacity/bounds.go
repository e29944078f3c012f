package capacity

import (
	"strings"
	"time"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/bounds"
)

// The spec's bounds.
const (
	MaxDemands          = 16
	MaxLeasesPerBatch   = 16
	MaxRowsPerPage      = 128
	MaxAmount           = 1_000_000_000
	MaxTTL              = 24 * time.Hour
	MaxBudget           = 1_000_000_000_000
	MaxClassesPerCell   = 16
	MaxCapacity         = 1_000_000_000_000_000
	MaxPriority         = 1 << 20
	MaxActivePerTenant  = 100_000
	EndedLeaseRetention = time.Hour
	maxScanPerReclaim   = 8 * MaxRowsPerPage
)

// generatedLeasePrefix starts every lease id the FSM makes up
// ("lease-<index>-<demand>"); a caller's lease_id may not, so the two
// can never collide.
const generatedLeasePrefix = "lease-"

// checkSchema accepts SchemaVersion, or nothing (the Go API speaks
// SchemaVersion when a request leaves it out; the HTTP routes require it:
// see onWire).
func checkSchema(v string) error {
	if v != "" && v != SchemaVersion {
		return errs.Errorf(errs.CodeInvalid, "schema_version must be %q, not %q", SchemaVersion, v)
	}
	return nil
}

func checkTTL(ms int64, optional bool) error {
	if optional && ms == 0 {
		return nil
	}
	if ms < 1 || ms > MaxTTL.Milliseconds() {
		return errs.Errorf(errs.CodeInvalid, "ttl_ms must be between 1 and %d", MaxTTL.Milliseconds())
	}
	return nil
}

func checkBudget(name string, v *int64) error {
	if v != nil && (*v < 0 || *v > MaxBudget) {
		return errs.Errorf(errs.CodeInvalid, "%s must be between 0 and %d", name, int64(MaxBudget))
	}
	return nil
}

func checkPage(maxCount int, cursor string) error {
	if maxCount < 1 || maxCount > MaxRowsPerPage {
		return errs.Errorf(errs.CodeInvalid, "max_count must be between 1 and %d", MaxRowsPerPage)
	}
	if len(cursor) > maxCursorLen {
		return errs.Errorf(errs.CodeInvalid, "cursor longer than %d bytes", maxCursorLen)
	}
	return nil
}

// OwnerDigest is the owner digest bound to a principal's persistent id
// (identity.Principal.OwnerDigest).
func OwnerDigest(principalID string) string { return identity.Principal{ID: principalID}.OwnerDigest() }

// A lease command's caller is checked in three steps, in this order:
// the owner digest is an identifier (the last check before access),
// the principal is a member of the tenant (holder, the access its
// fsm.Typed declares; mayNotHold refuses) and the owner digest is the
// verified principal's (checkOwner, first in the body). A command
// without a principal comes from an embedding host, which is trusted
// to name owners itself.
func checkOwnerDigest(owner string) error { return bounds.Identifier("owner_digest", owner) }

// mayNotHold refuses a principal that is not a member of tenant.
func mayNotHold(p identity.Principal, tenant string) error {
	return errs.Errorf(errs.CodeForbidden, "principal %q may not hold capacity in tenant %q", p.ID, tenant)
}

// checkOwner refuses an owner digest that is not the verified
// principal's.
func checkOwner(p identity.Principal, owner string) error {
	if !p.Trusted() && owner != p.OwnerDigest() {
		return errs.Errorf(errs.CodeForbidden, "owner_digest is not the digest of principal %q", p.ID)
	}
	return nil
}

func (c *acquireCmd) validate() error {
	for _, f := range []struct{ name, v string }{{"tenant_ref", c.TenantRef}, {"work_item_id", c.WorkItemID}} {
		if err := bounds.Identifier(f.name, f.v); err != nil {
			return err
		}
	}
	if err := bounds.OptionalIdentifier("lease_id", c.LeaseID); err != nil {
		return err
	}
	if strings.HasPrefix(c.LeaseID, generatedLeasePrefix) {
		return errs.Errorf(errs.CodeInvalid, "lease ids starting with %q are the FSM's to give", generatedLeasePrefix)
	}
	if err := bounds.Identifier("owner_digest", c.OwnerDigest); err != nil {
		return err
	}
	if len(c.Demands) == 0 || len(c.Demands) > MaxDemands {
		return errs.Errorf(errs.CodeInvalid, "an acquire holds 1 to %d demands, not %d", MaxDemands, len(c.Demands))
	}
	if c.LeaseID != "" && len(c.Demands) != 1 {
		return errs.New(errs.CodeInvalid, "lease_id names the lease of a single-demand acquire only")
	}
	for _, d := range c.Demands {
		if err := bounds.Identifier("cell_id", d.CellID); err != nil {
			return err
		}
		if err := bounds.Identifier("resource_class", d.ResourceClass); err != nil {
			return err
		}
		if d.Amount < 1 || d.Amount > MaxAmount {
			return errs.Errorf(errs.CodeInvalid, "amount must be between 1 and %d", MaxAmount)
		}
	}
	if c.Priority < -MaxPriority || c.Priority > MaxPriority {
		return errs.Errorf(errs.CodeInvalid, "priority must be between %d and %d", -MaxPriority, MaxPriority)
	}
	if err := checkTTL(c.TTLMs, false); err != nil {
		return err
	}
	if err := checkBudget("cost_budget_micros", c.CostBudgetMicros); err != nil {
		return err
	}
	return checkBudget("token_budget", c.TokenBudget)
}

func (c *leasesCmd) validate() error {
	if err := bounds.Identifier("tenant_ref", c.TenantRef); err != nil {
		return err
	}
	if len(c.Leases) == 0 || len(c.Leases) > MaxLeasesPerBatch {
		return errs.Errorf(errs.CodeInvalid, "a batch holds 1 to %d leases, not %d", MaxLeasesPerBatch, len(c.Leases))
	}
	seen := map[string]bool{}
	for _, l := range c.Leases {
		if err := bounds.Identifier("lease_id", l.LeaseID); err != nil {
			return err
		}
		if seen[l.LeaseID] {
			return errs.Errorf(errs.CodeInvalid, "lease %q named twice", l.LeaseID)
		}
		seen[l.LeaseID] = true
	}
	return checkTTL(c.TTLMs, true)
}

func (c *updateCellCmd) validate() error {
	if err := bounds.Identifier("tenant_ref", c.TenantRef); err != nil {
		return err
	}
	if err := bounds.Identifier("cell_id", c.Cell.CellID); err != nil {
		return err
	}
	if len(c.Cell.Capacities) > MaxClassesPerCell {
		return errs.Errorf(errs.CodeInvalid, "a cell has at most %d resource classes", MaxClassesPerCell)
	}
	for _, class := range sortedKeys(c.Cell.Capacities) { // the first bad class names the error on every replica
		if err := bounds.Identifier("resource_class", class); err != nil {
			return err
		}
		if cap := c.Cell.Capacities[class]; cap > MaxCapacity {
			return errs.Errorf(errs.CodeInvalid, "capacity of %q above %d", class, int64(MaxCapacity))
		}
	}
	return nil
}
