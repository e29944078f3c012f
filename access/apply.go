package access

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// The payloads of the commands. Hashes only: no payload has room for a
// token.
type (
	putCmd struct {
		Principal identity.PrincipalConfig `msgpack:"principal"`
		// Replace: an existing principal of that id is replaced (else
		// it is a conflict).
		Replace bool `msgpack:"replace,omitempty"`
	}
	removeCmd struct {
		ID string `msgpack:"id"`
	}
	rotateCmd struct {
		ID          string   `msgpack:"id"`
		TokenSHA256 []string `msgpack:"token_sha256"`
	}
	seedCmd struct {
		FileVersion uint64                     `msgpack:"file_version"`
		Principals  []identity.PrincipalConfig `msgpack:"principals"`
	}
)

// changeAccess is the access of every change, after its payload
// decoded: mayChange.
func changeAccess[P any](tx *fsm.Tx, _ *P) error { return mayChange(tx.Principal) }

// mayChange is the role a change needs: admin for every tenant (a
// principal table is the whole cluster's, and an admin of one tenant
// could otherwise grant another). The trusted empty principal (the node
// itself, an embedding host) passes.
func mayChange(p identity.Principal) error {
	if p.Trusted() || (p.HasRole(identity.RoleAdmin) && slices.Contains(p.Tenants, "*")) {
		return nil
	}
	return errs.Errorf(errs.CodeForbidden, "changing principals needs the admin role for every tenant (tenants [\"*\"]); principal %q has not", p.ID)
}

// superAdmin reports whether pc is an admin of every tenant with a
// credential: someone who can still change the table.
func superAdmin(pc identity.PrincipalConfig) bool {
	return slices.Contains(pc.Roles, identity.RoleAdmin) && slices.Contains(pc.Tenants, "*") && len(pc.TokenSHA256)+len(pc.CertSHA256) > 0
}

// normalize checks one principal's shape and bounds and returns it in its
// canonical form: hashes lower-case, every list sorted, no duplicates.
// identity.NewRegistry checks the rest (ids, roles, digests) over the
// whole table.
func normalize(pc identity.PrincipalConfig) (identity.PrincipalConfig, error) {
	if len(pc.Tenants) > MaxTenants {
		return pc, errs.Errorf(errs.CodeInvalid, "principal %q has %d tenants, more than %d", pc.ID, len(pc.Tenants), MaxTenants)
	}
	if len(pc.Roles) > 4 {
		return pc, errs.Errorf(errs.CodeInvalid, "principal %q has %d roles; there are 4", pc.ID, len(pc.Roles))
	}
	if n := len(pc.TokenSHA256) + len(pc.CertSHA256); n > MaxCredentials {
		return pc, errs.Errorf(errs.CodeInvalid, "principal %q has %d credentials, more than %d", pc.ID, n, MaxCredentials)
	}
	out := identity.PrincipalConfig{ID: pc.ID}
	for _, l := range []struct {
		name     string
		in       []string
		into     *[]string
		lowerHex bool
	}{{"tenants", pc.Tenants, &out.Tenants, false}, {"roles", pc.Roles, &out.Roles, false},
		{"token_sha256", pc.TokenSHA256, &out.TokenSHA256, true}, {"cert_sha256", pc.CertSHA256, &out.CertSHA256, true}} {
		list := slices.Clone(l.in)
		if l.lowerHex {
			for i := range list {
				list[i] = strings.ToLower(list[i])
			}
		}
		slices.Sort(list)
		for i := 1; i < len(list); i++ {
			if list[i] == list[i-1] {
				return pc, errs.Errorf(errs.CodeInvalid, "principal %q lists %s %q twice", pc.ID, l.name, list[i])
			}
		}
		*l.into = list
	}
	return out, nil
}

// validate checks a whole table, as a node would load it: the registry it
// makes, or invalid.
func validate(list []identity.PrincipalConfig) (*identity.Registry, error) {
	if len(list) > MaxPrincipals {
		return nil, errs.Errorf(errs.CodeInvalid, "%d principals, more than %d", len(list), MaxPrincipals)
	}
	reg, err := identity.NewRegistry(list)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "%s", strings.TrimPrefix(err.Error(), "identity: "))
	}
	return reg, nil
}

// Digest is "sha256:" + the hex SHA-256 of the canonical form of a set of
// principals (normalized, sorted by id): a file and the table that hold
// the same principals have the same digest.
func Digest(list []identity.PrincipalConfig) string {
	canon := make([]identity.PrincipalConfig, 0, len(list))
	for _, pc := range list {
		n, err := normalize(pc)
		if err != nil {
			n = pc
		}
		canon = append(canon, n)
	}
	slices.SortFunc(canon, func(a, b identity.PrincipalConfig) int { return strings.Compare(a.ID, b.ID) })
	sum := sha256.Sum256(log.MustMarshal(canon))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (r *principalRow) config() identity.PrincipalConfig {
	return identity.PrincipalConfig{ID: r.ID, Tenants: slices.Clone(r.Tenants), Roles: slices.Clone(r.Roles),
		TokenSHA256: slices.Clone(r.TokenSHA256), CertSHA256: slices.Clone(r.CertSHA256)}
}

// table is the stored state: the source row (nil: no table yet) and
// every principal in id order. A table holds at most MaxPrincipals rows.
type table struct {
	source *sourceRow
	rows   []*principalRow
}

func load(s fsm.Store) (table, error) {
	var t table
	raw, err := s.FirstString(tableSource, "id", sourceRowID)
	if err != nil {
		return t, errs.Errorf(errs.CodeInternal, "read principals source: %v", err)
	}
	if raw != nil {
		t.source = raw.(*sourceRow)
	}
	it, err := s.Get(tablePrincipals, "id")
	if err != nil {
		return t, errs.Errorf(errs.CodeInternal, "read principals: %v", err)
	}
	// Bounded: every change keeps the table at MaxPrincipals rows at most.
	for obj := it.Next(); obj != nil; obj = it.Next() {
		t.rows = append(t.rows, obj.(*principalRow))
	}
	return t, nil
}

func (t table) configs() []identity.PrincipalConfig {
	out := make([]identity.PrincipalConfig, len(t.rows))
	for i, r := range t.rows {
		out[i] = r.config()
	}
	return out
}

func (t table) find(id string) *principalRow {
	for _, r := range t.rows {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// hasSuperAdmin reports whether a list holds an admin of every tenant
// with a credential.
func hasSuperAdmin(list []identity.PrincipalConfig) bool {
	return slices.ContainsFunc(list, superAdmin)
}

// requireTable refuses an API change while the cluster holds no table: it
// would make a table of one principal and silently end the file's.
func (t table) requireTable() error {
	if t.source == nil {
		return errs.New(errs.CodeConflict, "the cluster holds no principal table yet: a node started with --principals seeds it once the cluster enables access control")
	}
	return nil
}

// change is an API change's end: the changed list is checked as a
// whole (the registry it makes, an admin left), the source row records
// it, the event is emitted and the node's registry follows after commit.
func (g *Guard) change(tx *fsm.Tx, t table, after []identity.PrincipalConfig, kind, id string) (*identity.Registry, error) {
	reg, err := validate(after)
	if err != nil {
		return nil, err
	}
	if hasSuperAdmin(t.configs()) && !hasSuperAdmin(after) {
		return nil, errs.New(errs.CodeConflict, "the change would leave no admin for every tenant with a credential: no one could change principals again")
	}
	src := *t.source
	src.Source, src.Index, src.AtMs = SourceAdmin, tx.Index, tx.Now
	if err := tx.Insert(tableSource, &src); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "store principals source: %v", err)
	}
	tx.Emit(kind, id, "")
	g.install(tx, reg, &src, after)
	return reg, nil
}

// loadTable is the cluster's table, which every change through the API
// needs (requireTable).
func loadTable(tx *fsm.Tx) (table, error) {
	t, err := load(tx)
	if err != nil {
		return table{}, err
	}
	if err := t.requireTable(); err != nil {
		return table{}, err
	}
	return t, nil
}

// existing is the table and its principal id, which must be there.
func existing(tx *fsm.Tx, id string) (table, *principalRow, error) {
	t, err := loadTable(tx)
	if err != nil {
		return table{}, nil, err
	}
	cur := t.find(id)
	if cur == nil {
		return table{}, nil, errs.Errorf(errs.CodeNotFound, "no principal %q", id)
	}
	return t, cur, nil
}

func (g *Guard) applyPut(tx *fsm.Tx, _ *log.Command, cp *putCmd) (any, error) {
	c := *cp
	pc, err := normalize(c.Principal)
	if err != nil {
		return nil, err
	}
	t, err := loadTable(tx)
	if err != nil {
		return nil, err
	}
	cur := t.find(pc.ID)
	if cur != nil && !c.Replace {
		return nil, errs.Errorf(errs.CodeConflict, "principal %q exists (replace it, or rotate its token)", pc.ID)
	}
	after := t.configs()
	if cur != nil {
		after[slices.IndexFunc(after, func(o identity.PrincipalConfig) bool { return o.ID == pc.ID })] = pc
	} else {
		after = append(after, pc)
	}
	if _, err := g.change(tx, t, after, "principal_put", pc.ID); err != nil {
		return nil, err
	}
	row := &principalRow{ID: pc.ID, Tenants: pc.Tenants, Roles: pc.Roles, TokenSHA256: pc.TokenSHA256, CertSHA256: pc.CertSHA256,
		Source: SourceAdmin, SetIndex: tx.Index, SetAtMs: tx.Now}
	if err := tx.Insert(tablePrincipals, row); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "store principal: %v", err)
	}
	return changeResult(row, cur == nil, after, tx.Index), nil
}

func (g *Guard) applyRemove(tx *fsm.Tx, _ *log.Command, cp *removeCmd) (any, error) {
	c := *cp
	t, cur, err := existing(tx, c.ID)
	if err != nil {
		return nil, err
	}
	after := slices.DeleteFunc(t.configs(), func(o identity.PrincipalConfig) bool { return o.ID == c.ID })
	if _, err := g.change(tx, t, after, "principal_removed", c.ID); err != nil {
		return nil, err
	}
	if err := tx.Delete(tablePrincipals, cur); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "delete principal: %v", err)
	}
	res := changeResult(cur, false, after, tx.Index)
	res.Removed = true
	return res, nil
}

func (g *Guard) applyRotate(tx *fsm.Tx, _ *log.Command, cp *rotateCmd) (any, error) {
	c := *cp
	if len(c.TokenSHA256) == 0 {
		return nil, errs.New(errs.CodeInvalid, "a rotation needs the new token's token_sha256")
	}
	t, cur, err := existing(tx, c.ID)
	if err != nil {
		return nil, err
	}
	next := cur.config()
	next.TokenSHA256 = c.TokenSHA256
	pc, err := normalize(next)
	if err != nil {
		return nil, err
	}
	after := t.configs()
	after[slices.IndexFunc(after, func(o identity.PrincipalConfig) bool { return o.ID == c.ID })] = pc
	if _, err := g.change(tx, t, after, "principal_rotated", c.ID); err != nil {
		return nil, err
	}
	row := *cur
	row.TokenSHA256, row.Source, row.SetIndex, row.SetAtMs = pc.TokenSHA256, SourceAdmin, tx.Index, tx.Now
	if err := tx.Insert(tablePrincipals, &row); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "store principal: %v", err)
	}
	return changeResult(&row, false, after, tx.Index), nil
}

// applySeed replaces the table with a node's file, when the cluster holds
// none yet or the file's version is above every one it took; else it
// answers the cluster's table, not applied.
func (g *Guard) applySeed(tx *fsm.Tx, _ *log.Command, cp *seedCmd) (any, error) {
	c := *cp
	if c.FileVersion > identity.MaxFileVersion {
		return nil, errs.Errorf(errs.CodeInvalid, "file_version %d is above %d", c.FileVersion, uint64(identity.MaxFileVersion))
	}
	if len(c.Principals) > MaxPrincipals {
		return nil, errs.Errorf(errs.CodeInvalid, "%d principals, more than %d", len(c.Principals), MaxPrincipals)
	}
	list := make([]identity.PrincipalConfig, len(c.Principals))
	for i, pc := range c.Principals {
		n, err := normalize(pc)
		if err != nil {
			return nil, err
		}
		list[i] = n
	}
	slices.SortFunc(list, func(a, b identity.PrincipalConfig) int { return strings.Compare(a.ID, b.ID) })
	reg, err := validate(list)
	if err != nil {
		return nil, err
	}
	t, err := load(tx)
	if err != nil {
		return nil, err
	}
	if t.source != nil && c.FileVersion <= t.source.FileVersion {
		return seedResult(t.source, t.configs(), false), nil
	}
	for _, r := range t.rows {
		if err := tx.Delete(tablePrincipals, r); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "delete principal: %v", err)
		}
	}
	for _, pc := range list {
		row := &principalRow{ID: pc.ID, Tenants: pc.Tenants, Roles: pc.Roles, TokenSHA256: pc.TokenSHA256, CertSHA256: pc.CertSHA256,
			Source: SourceFile, SetIndex: tx.Index, SetAtMs: tx.Now}
		if err := tx.Insert(tablePrincipals, row); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "store principal: %v", err)
		}
	}
	src := &sourceRow{ID: sourceRowID, Source: SourceFile, FileVersion: c.FileVersion, Index: tx.Index, AtMs: tx.Now}
	if err := tx.Insert(tableSource, src); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "store principals source: %v", err)
	}
	tx.Emit("principals_seeded", sourceRowID, "")
	g.install(tx, reg, src, list)
	return seedResult(src, list, true), nil
}

// install hands the registry a change made to the node's guard once the
// entry commits, on every replica (an effect: nothing of it reaches the
// state or the result).
func (g *Guard) install(tx *fsm.Tx, reg *identity.Registry, src *sourceRow, list []identity.PrincipalConfig) {
	if g == nil {
		return
	}
	st := tableState{registry: reg.AsTable(), source: src.Source, fileVersion: src.FileVersion, index: tx.Index, digest: Digest(list), count: len(list), list: list}
	index := tx.Index
	tx.AfterCommit("access_registry", func() error { return g.setTable(&st, index) })
}

// restored brings the guard up to a state a snapshot replaced: the
// table's registry, or none (the file is in force again), as of the
// snapshot's applied index (a restart's snapshot may be older than the
// guard's copy; a cluster restore's index is above every applied one).
func (g *Guard) restored(rt *fsm.ReadTx) []fsm.Effect {
	if g == nil {
		return nil
	}
	t, err := load(rt.Txn)
	var st *tableState
	if err == nil && t.source != nil {
		list := t.configs()
		reg, verr := identity.NewRegistry(list)
		if verr != nil {
			err = verr
		} else {
			st = &tableState{registry: reg.AsTable(), source: t.source.Source, fileVersion: t.source.FileVersion, index: t.source.Index, digest: Digest(list), count: len(list), list: list}
		}
	}
	return []fsm.Effect{{Name: "access_registry", Run: func() error {
		if err != nil {
			return err // the previous registry stays in force, and the failure is logged
		}
		return g.setTable(st, rt.Index)
	}}}
}

// runList answers QueryList (admins): the table, without hashes.
func runList(rt *fsm.ReadTx, _ []byte) (any, error) {
	if !rt.Principal.HasRole(identity.RoleAdmin) {
		return nil, errs.Errorf(errs.CodeForbidden, "listing principals needs the admin role; principal %q has not", rt.Principal.ID)
	}
	t, err := load(rt.Txn)
	if err != nil {
		return nil, err
	}
	out := &ListResult{Principals: make([]PrincipalInfo, 0, len(t.rows))}
	if t.source != nil {
		out.Configured, out.Source, out.FileVersion, out.Index = true, t.source.Source, t.source.FileVersion, t.source.Index
		out.Digest = Digest(t.configs())
	}
	for _, r := range t.rows {
		out.Principals = append(out.Principals, info(r))
	}
	return out, nil
}
