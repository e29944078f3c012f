package allocation

import (
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// putSpaceCmd is the payload of CmdPutSpace.
type putSpaceCmd struct {
	Slug            string       `msgpack:"slug"`
	TenantRef       string       `msgpack:"tenant_ref"` // "": keep the space's tenant (a new space: the slug)
	Catalog         []CatalogRow `msgpack:"catalog"`
	DeliveryModes   []string     `msgpack:"delivery_modes"` // nil: DefaultDeliveryModes
	WindowMs        int64        `msgpack:"window_ms"`      // 0: DefaultWindow
	AdHocSlots      bool         `msgpack:"adhoc_slots,omitempty"`
	ExpectedVersion *uint64      `msgpack:"expected_version"`
}

// normalize validates c and returns the space it describes (work item
// ids normalized, defaults filled in; tenant, when c names none) and
// each catalog row's bag.
func (c *putSpaceCmd) normalize(tenant string) (Space, [][]string, error) {
	if err := checkSlug(c.Slug); err != nil {
		return Space{}, nil, err
	}
	sp := Space{Slug: c.Slug, TenantRef: c.TenantRef, WindowMs: c.WindowMs, DeliveryModes: c.DeliveryModes, AdHocSlots: c.AdHocSlots}
	if sp.TenantRef == "" {
		sp.TenantRef = tenant
	}
	if err := bounds.Identifier("tenant_ref", sp.TenantRef); err != nil {
		return Space{}, nil, err
	}
	if sp.WindowMs == 0 {
		sp.WindowMs = DefaultWindow.Milliseconds()
	}
	if sp.WindowMs < 1 || sp.WindowMs > MaxWindow.Milliseconds() {
		return Space{}, nil, errs.Errorf(errs.CodeInvalid, "window_ms must be between 1 and %d", MaxWindow.Milliseconds())
	}
	if sp.DeliveryModes == nil {
		sp.DeliveryModes = DefaultDeliveryModes
	}
	if len(sp.DeliveryModes) == 0 || len(sp.DeliveryModes) > MaxDeliveryModes {
		return Space{}, nil, errs.Errorf(errs.CodeInvalid, "delivery_modes lists 1 to %d modes, not %d", MaxDeliveryModes, len(sp.DeliveryModes))
	}
	for i, m := range sp.DeliveryModes {
		if err := checkMode(m); err != nil {
			return Space{}, nil, err
		}
		if slices.Contains(sp.DeliveryModes[:i], m) {
			return Space{}, nil, errs.Errorf(errs.CodeInvalid, "delivery_mode %q listed twice", m)
		}
	}
	sp.DeliveryModes = slices.Clone(sp.DeliveryModes)
	if len(c.Catalog) > MaxCatalogRows {
		return Space{}, nil, errs.Errorf(errs.CodeInvalid, "a catalog holds at most %d rows, not %d", MaxCatalogRows, len(c.Catalog))
	}
	sp.Catalog = make([]CatalogRow, 0, len(c.Catalog))
	bags := make([][]string, 0, len(c.Catalog))
	seen := map[string]bool{}
	for _, row := range c.Catalog {
		id, err := NormalizeWorkItemID(row.WorkItemID)
		if err != nil {
			return Space{}, nil, err
		}
		if seen[id] {
			return Space{}, nil, errs.Errorf(errs.CodeInvalid, "catalog lists work item %s twice", id)
		}
		seen[id] = true
		if len(row.Aliases) > MaxAliases {
			return Space{}, nil, errs.Errorf(errs.CodeInvalid, "work item %s has %d aliases, at most %d", id, len(row.Aliases), MaxAliases)
		}
		phrases := append([]string{row.CanonicalTitle}, row.Aliases...)
		for _, p := range phrases {
			if err := checkText("work item "+id+": a canonical title or alias", p, MaxPhraseBytes); err != nil {
				return Space{}, nil, err
			}
		}
		bag := bagOf(phrases)
		if len(bag) == 0 {
			return Space{}, nil, errs.Errorf(errs.CodeInvalid, "work item %s: its canonical title and aliases have no token that is not a stopword", id)
		}
		aliases := slices.Clone(row.Aliases)
		if aliases == nil {
			aliases = []string{}
		}
		sp.Catalog = append(sp.Catalog, CatalogRow{WorkItemID: id, CanonicalTitle: row.CanonicalTitle, Aliases: aliases})
		bags = append(bags, bag)
	}
	return sp, bags, nil
}

// bagOf is the union of the phrases' token sets, sorted (spec section 2.1
// step 3: the slot id is never added to the bag).
func bagOf(phrases []string) []string {
	var all []string
	for _, p := range phrases {
		all = append(all, Tokens(p)...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// applyPutSpace creates or replaces a space's configuration (controller
// role in its tenant, and in the tenant it had). A put that names no
// tenant_ref keeps the space's tenant: moving a space to another tenant
// hides it from its members, so it is never a default. From version 2
// on the put rebinds the space's live tasks against the new catalog in
// the same command (rebind.go) and answers how many changed key and the
// first page of the space's duplicates; at version 1 tasks kept their
// keys and a new catalog bound only what came after it.
func applyPutSpace(tx *fsm.Tx, _ *log.Command, c *putSpaceCmd) (any, error) {
	v := tx.EnabledVersion(CmdPutSpace)
	old, err := getSpace(tx, c.Slug)
	switch {
	case errs.CodeOf(err) == errs.CodeNotFound:
		old = nil
	case err != nil:
		return nil, err
	}
	tenant := c.Slug
	if old != nil {
		tenant = old.Space.TenantRef
	}
	sp, bags, err := c.normalize(tenant)
	if err != nil {
		return nil, err
	}
	if err := checkAccess(tx.Principal, sp.TenantRef, identity.RoleController); err != nil {
		return nil, err
	}
	row := &spaceRow{Slug: sp.Slug, NextTaskID: 1, NextNoteID: 1}
	var version uint64
	if old != nil {
		if err := checkAccess(tx.Principal, old.Space.TenantRef, identity.RoleController); err != nil {
			return nil, err
		}
		row.NextTaskID, row.NextNoteID, version = old.NextTaskID, old.NextNoteID, old.Space.Version
	}
	if c.ExpectedVersion != nil && *c.ExpectedVersion != version {
		return nil, errs.Errorf(errs.CodeConflict, "space %q is at version %d, not %d", sp.Slug, version, *c.ExpectedVersion)
	}
	var live []*Task
	if v >= 2 && old != nil {
		if live, err = liveTasks(tx, sp.Slug); err != nil {
			return nil, err
		}
	}
	sp.Version, sp.UpdatedBy, sp.UpdatedAtMs = version+1, principalID(tx.Principal), tx.Now
	row.Space, row.Bags = sp, bags
	if err := tx.Insert(tableSpaces, row); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "write space: %v", err)
	}
	tx.Emit("allocation_space_put", sp.Slug, sp.TenantRef)
	res := &SpaceResult{Space: sp}
	if v >= 2 {
		if res.Rebound, err = rebindSpace(tx, row, live); err != nil {
			return nil, err
		}
		if res.Duplicates, err = duplicatesPage(tx, sp.Slug, 0, MaxPage, tx.Now); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// SpaceResult is the answer of PUT and GET /v1/spaces/{slug}. A put
// (version 2) also says how many live tasks it rebound and gives the
// first page of the space's duplicates.
type SpaceResult struct {
	Space      Space          `json:"space" msgpack:"space"`
	Rebound    int            `json:"rebound,omitempty" msgpack:"rebound,omitempty"`
	Duplicates *DuplicatePage `json:"duplicates,omitempty" msgpack:"duplicates,omitempty"`
}
