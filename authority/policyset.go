package authority

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// The replicated policy set. The policies every replica validates concept
// ids against are replicated configuration, one set for the cluster, as
// the work-item reservation profiles are: CmdReserve and CmdReclaim
// select a claim's policy from it inside Apply. A node's
// --concept-policies file (or builtin.Options.ConceptPolicies) only
// seeds it: a seed applies when the cluster has no set yet, or when the
// seed's version is newer than the set's, and never undoes a change an
// admin made through the API (PUT /v1/concepts/policies, which gives the
// set the next version). The set has a version: a file states it
// ({"version": N, "policies": [...]}), an unversioned file (a bare
// array) is version 0, and an admin's replacement takes the next one
// unless it names a higher one.

// policyRow is the one row of tablePolicies.
type policyRow struct {
	ID      string `msgpack:"id"`
	Version uint64 `msgpack:"version"`
	// Policies are sorted by scope and range (checkPolicies).
	Policies []ConceptNamespacePolicy `msgpack:"policies"`
	// Source is who set it: "seed" (a node's file) or "admin" (the API).
	Source  string `msgpack:"source"`
	SetAtMs int64  `msgpack:"set_at_ms"`
}

const (
	policyRowID  = "policies"
	SourceSeed   = "seed"
	SourceAdmin  = "admin"
	eventSetKind = "concept_policies_set"
	// maxSetVersion keeps versions exact in every JSON client (2^53).
	maxSetVersion = 1<<53 - 1
)

// PoliciesRequest replaces the replicated policy set (admins). Version 0
// gives the set the version after the current one (and an identical set
// changes nothing); another version must be newer than the current one.
type PoliciesRequest struct {
	Version  uint64                   `json:"version,omitempty"`
	Policies []ConceptNamespacePolicy `json:"policies"`
}

// PoliciesResult is the replicated policy set. Configured is false while
// the cluster has none (every reserve is refused). Changed says a set or
// seed command replaced it; a seed that did not apply (the cluster's set
// is as new or newer) answers the cluster's set with Changed false.
type PoliciesResult struct {
	Configured bool                     `json:"configured" msgpack:"configured"`
	Version    uint64                   `json:"version" msgpack:"version"`
	Policies   []ConceptNamespacePolicy `json:"policies" msgpack:"policies"`
	Digest     string                   `json:"digest" msgpack:"digest"`
	Source     string                   `json:"source,omitempty" msgpack:"source"`
	SetAtMs    int64                    `json:"set_at_ms,omitempty" msgpack:"set_at_ms"`
	Changed    bool                     `json:"changed" msgpack:"changed"`
}

// setPoliciesCmd is the payload of CmdSetPolicies.
type setPoliciesCmd struct {
	Version  uint64                   `msgpack:"version"`
	Policies []ConceptNamespacePolicy `msgpack:"policies"`
	// Seed: a node's configured set, applied only when the cluster has
	// none or Version is newer than the cluster's.
	Seed bool `msgpack:"seed,omitempty"`
}

// policiesDigest is "sha256:" + the hex SHA-256 of the sorted set's
// canonical msgpack: equal sets, equal digests.
func policiesDigest(list []ConceptNamespacePolicy) string {
	if list == nil {
		list = []ConceptNamespacePolicy{}
	}
	sum := sha256.Sum256(log.MustMarshal(list))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func storedPolicies(s fsm.Store) (*policyRow, error) {
	raw, err := s.FirstString(tablePolicies, "id", policyRowID)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read policies: %v", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*policyRow), nil
}

func policiesResult(row *policyRow, changed bool) *PoliciesResult {
	if row == nil {
		return &PoliciesResult{Policies: []ConceptNamespacePolicy{}, Digest: policiesDigest(nil)}
	}
	list := append([]ConceptNamespacePolicy{}, row.Policies...)
	return &PoliciesResult{Configured: true, Version: row.Version, Policies: list,
		Digest: policiesDigest(row.Policies), Source: row.Source, SetAtMs: row.SetAtMs, Changed: changed}
}

// applySetPolicies replaces the policy set, or seeds it. Claims already
// made keep the policy they were bound to; a reserve or reclaim decided
// after this entry selects from the new set.
func applySetPolicies(tx *fsm.Tx, _ *log.Command, c *setPoliciesCmd) (any, error) {
	list, err := checkPolicies(c.Policies)
	if err != nil {
		return nil, err
	}
	if c.Version > maxSetVersion {
		return nil, errs.Errorf(errs.CodeInvalid, "policy set version %d is above %d", c.Version, uint64(maxSetVersion))
	}
	cur, err := storedPolicies(tx)
	if err != nil {
		return nil, err
	}
	next := &policyRow{ID: policyRowID, Version: c.Version, Policies: list, Source: SourceAdmin, SetAtMs: tx.Now}
	switch {
	case c.Seed:
		if cur != nil && c.Version <= cur.Version {
			return policiesResult(cur, false), nil
		}
		next.Source = SourceSeed
	case c.Version == 0:
		if cur != nil && slices.Equal(cur.Policies, list) {
			return policiesResult(cur, false), nil
		}
		if cur != nil {
			if cur.Version >= maxSetVersion {
				return nil, errs.Errorf(errs.CodeInvalid, "policy set version %d has no successor", cur.Version)
			}
			next.Version = cur.Version + 1
		} else {
			next.Version = 1
		}
	case cur != nil && c.Version <= cur.Version:
		return nil, errs.Errorf(errs.CodeConflict, "policy set version %d is not newer than the cluster's version %d", c.Version, cur.Version)
	}
	if next.Policies == nil {
		next.Policies = []ConceptNamespacePolicy{}
	}
	if err := tx.Insert(tablePolicies, next); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "store policies: %v", err)
	}
	ev := struct {
		Version  uint64 `json:"version"`
		Digest   string `json:"digest"`
		Count    int    `json:"count"`
		Source   string `json:"source"`
		Previous uint64 `json:"previous_version"`
	}{next.Version, policiesDigest(next.Policies), len(next.Policies), next.Source, 0}
	if cur != nil {
		ev.Previous = cur.Version
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "encode event: %v", err)
	}
	if _, err := tx.EmitPayload(eventSetKind, policyRowID, "", body); err != nil {
		return nil, err
	}
	return policiesResult(next, true), nil
}

// runPolicies answers QueryPolicies: the set (any principal: policies
// hold no tenant's data).
func runPolicies(rt *fsm.ReadTx, _ []byte) (any, error) {
	row, err := storedPolicies(rt.Txn)
	if err != nil {
		return nil, err
	}
	return policiesResult(row, false), nil
}

// Policies reads the replicated policy set.
func (s *Service) Policies(ctx context.Context, c fsm.Consistency) (*PoliciesResult, error) {
	var out PoliciesResult
	if err := fsm.Ask(ctx, s.r, QueryPolicies, c == fsm.Stale, struct{}{}, &out); err != nil {
		return nil, fromCluster(err)
	}
	return &out, nil
}

// SetPolicies replaces the replicated policy set (admins for every
// tenant). From then on every node validates concept ids against it,
// whatever its own --concept-policies says; a node's file replaces it
// again only with a newer version.
func (s *Service) SetPolicies(ctx context.Context, req PoliciesRequest) (*PoliciesResult, error) {
	if _, err := checkPolicies(req.Policies); err != nil {
		return nil, err
	}
	if req.Policies == nil {
		req.Policies = []ConceptNamespacePolicy{}
	}
	return s.setPolicies(ctx, setPoliciesCmd{Version: req.Version, Policies: req.Policies})
}

// Seed proposes ps as the replicated set: it applies only when the
// cluster has none, or ps's version is newer than the cluster's. The
// answer is the cluster's set after it (Changed: the seed applied).
func (s *Service) Seed(ctx context.Context, ps *PolicySet) (*PoliciesResult, error) {
	if ps == nil {
		return nil, errs.New(errs.CodeInvalid, "no policy set to seed")
	}
	return s.setPolicies(ctx, setPoliciesCmd{Version: ps.version, Policies: ps.Policies(), Seed: true})
}

func (s *Service) setPolicies(ctx context.Context, c setPoliciesCmd) (*PoliciesResult, error) {
	var out PoliciesResult
	if _, err := fsm.Submit(ctx, s.p, log.Command{Type: CmdSetPolicies, Version: 1}, c, &out); err != nil {
		return nil, fromCluster(err)
	}
	return &out, nil
}
