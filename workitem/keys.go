package workitem

import (
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/workitem/extension"
)

// Keys a reservation holds in its tenant, besides host capacity.
//
//   - Repository: an exclusive reservation holds its repository alone
//     (no other reservation of it, exclusive or not); any other holds it
//     shared, which an exclusive one waits for. The same for its branch
//     identity (extension.BranchIdentity) within the repository.
//   - Concurrency: at most limit active reservations share the key. Its
//     holders all assert the same limit: the first holder's is the
//     key's until none is left, and a reserve asserting another is
//     refused (concurrency_limit), so the key is never above any
//     holder's limit.
//   - Anti-affinity: no two active reservations of the tenant on one
//     host share an anti-affinity key.
//
// Keys are per tenant: another tenant's names never block, or reveal
// anything to, this one.

func getKey(s fsm.Store, kind, tenant, a, b string) (*keyRow, error) {
	raw, err := s.First(tableResKeys, "id", kind, tenant, a, b)
	if err != nil {
		return nil, internal("read reservation key", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*keyRow), nil
}

// keysOf is what a reservation of ext on host will hold.
func keysOf(ext *extension.Extension) Keys {
	k := Keys{Repository: ext.Repository, RepositoryExclusive: ext.Exclusivity.Repository, Branch: ext.BranchIdentity(),
		BranchExclusive: ext.Exclusivity.Branch, Concurrency: ext.Concurrency.Key, ConcurrencyLimit: ext.Concurrency.Limit, AntiAffinity: append([]string{}, ext.AntiAffinity...),
		FairnessGroup: ext.Fairness.Group}
	return k
}

// checkAffinity refuses a host on which another active reservation of
// the tenant holds one of the anti-affinity keys.
func checkAffinity(s fsm.Store, tenant, host string, keys []string) error {
	for _, k := range keys {
		row, err := getKey(s, keyAffinity, tenant, host, k)
		if err != nil {
			return err
		}
		if row != nil {
			e := refuse(RefuseAntiAffinity, "reservation %s on host %q holds anti-affinity key %q", row.Holder, host, k)
			e.Detail["key"], e.Detail["holder"] = k, row.Holder
			return e
		}
	}
	return nil
}

// checkExclusive refuses what the repository and branch keys forbid, and
// a concurrency key at its limit.
func checkExclusive(s fsm.Store, tenant string, ext *extension.Extension) error {
	blocked := func(kind, a, b string, exclusive bool, reason, what string) error {
		row, err := getKey(s, kind, tenant, a, b)
		if err != nil || row == nil {
			return err
		}
		switch {
		case row.Holder != "":
			e := refuse(reason, "%s is held exclusively by reservation %s", what, row.Holder)
			e.Detail["holder"] = row.Holder
			return e
		case exclusive && row.Count > 0:
			e := refuse(reason, "%s is in use by %d active reservations", what, row.Count)
			e.Detail["active"] = row.Count
			return e
		}
		return nil
	}
	if err := blocked(keyRepository, ext.Repository, noB, ext.Exclusivity.Repository, RefuseRepositoryExclusive, "repository "+quote(ext.Repository)); err != nil {
		return err
	}
	if b := ext.BranchIdentity(); b != "" {
		if err := blocked(keyBranch, ext.Repository, b, ext.Exclusivity.Branch, RefuseBranchExclusive, "branch "+quote(b)+" of "+quote(ext.Repository)); err != nil {
			return err
		}
	}
	row, err := getKey(s, keyConcurrent, tenant, ext.Concurrency.Key, noB)
	if err != nil {
		return err
	}
	if row != nil && row.Limit != ext.Concurrency.Limit {
		e := refuse(RefuseConcurrencyLimit, "concurrency key %q is held under limit %d; %d was asserted", ext.Concurrency.Key, row.Limit, ext.Concurrency.Limit)
		e.Detail["active"], e.Detail["limit"] = row.Count, row.Limit
		return e
	}
	if row != nil && row.Count >= ext.Concurrency.Limit {
		e := refuse(RefuseConcurrencyLimit, "concurrency key %q has %d active reservations; the limit is %d", ext.Concurrency.Key, row.Count, ext.Concurrency.Limit)
		e.Detail["active"], e.Detail["limit"] = row.Count, ext.Concurrency.Limit
		return e
	}
	return nil
}

func quote(s string) string { return "\"" + s + "\"" }

// holdKeys inserts (delta 1) or drops (delta -1) every key r holds.
func holdKeys(tx *fsm.Tx, r *Reservation, delta int64) error {
	k := r.Keys
	type key struct {
		kind, a, b string
		exclusive  bool
	}
	list := []key{{keyRepository, k.Repository, noB, k.RepositoryExclusive}, {keyConcurrent, k.Concurrency, noB, false}}
	if k.Branch != "" {
		list = append(list, key{keyBranch, k.Repository, k.Branch, k.BranchExclusive})
	}
	for _, a := range k.AntiAffinity {
		list = append(list, key{keyAffinity, r.HostID, a, true})
	}
	for _, x := range list {
		if err := bump(tx, r.TenantRef, x.kind, x.a, x.b, x.exclusive, r.ReservationID, delta, k.ConcurrencyLimit); err != nil {
			return err
		}
	}
	return nil
}

// bump changes one key row: takes or frees its exclusive hold, or
// counts one more or one less; a row left with neither is deleted.
func bump(tx *fsm.Tx, tenant, kind, a, b string, exclusive bool, holder string, delta, limit int64) error {
	old, err := getKey(tx, kind, tenant, a, b)
	if err != nil {
		return err
	}
	row := keyRow{Kind: kind, TenantRef: tenant, A: a, B: b}
	if old != nil {
		row = *old
	}
	switch {
	case exclusive && delta > 0:
		if row.Holder != "" {
			return errs.Errorf(errs.CodeInternal, "%s key %q/%q held twice (%s, %s)", kind, a, b, row.Holder, holder)
		}
		row.Holder = holder
	case exclusive:
		if row.Holder != holder {
			return errs.Errorf(errs.CodeInternal, "%s key %q/%q is %s's, not %s's", kind, a, b, row.Holder, holder)
		}
		row.Holder = ""
	default:
		row.Count += delta
		if kind == keyConcurrent {
			row.Limit = limit
		}
	}
	if row.Count < 0 {
		return errs.Errorf(errs.CodeInternal, "%s key %q/%q counted below zero", kind, a, b)
	}
	if old != nil {
		if err := tx.Delete(tableResKeys, old); err != nil {
			return internal("update reservation key", err)
		}
	}
	if row.Holder == "" && row.Count == 0 {
		return nil
	}
	if err := tx.Insert(tableResKeys, &row); err != nil {
		return internal("store reservation key", err)
	}
	return nil
}
