package authority

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/internal/strictjson"
)

// ConceptNamespacePolicy says which numbers of a namespace (or of a
// semantic prefix inside it) the authority hands out, under which policy
// version. The deployment supplies them.
type ConceptNamespacePolicy struct {
	Namespace string `json:"namespace" msgpack:"namespace"`
	// Prefix, if set, makes the policy cover NAMESPACE-PREFIX-<n> ids
	// (RMDD-SEARCH-7 for prefix SEARCH) instead of NAMESPACE-<n>: each
	// prefix is an id space of its own, declared explicitly.
	Prefix        string `json:"prefix,omitempty" msgpack:"prefix,omitempty"`
	Min           uint64 `json:"min" msgpack:"min"`
	Max           uint64 `json:"max" msgpack:"max"`
	PolicyVersion string `json:"policy_version" msgpack:"policy_version"`
}

// Scope is what the policy covers numbers of: RMDD, or RMDD-SEARCH.
func (p *ConceptNamespacePolicy) Scope() string { return scopeOf(p.Namespace, p.Prefix) }

// MaxPolicies bounds a policy set (it is replicated as one row, and every
// reservation searches it).
const MaxPolicies = 256

// PolicySet is a validated set of policies in which every concept id
// matches at most one policy.
type PolicySet struct {
	// list is sorted by scope, then range: Select searches it.
	list []ConceptNamespacePolicy
	// version orders sets loaded from files (see PolicyFile); 0 for a
	// set without one.
	version uint64
}

// NewPolicySet validates policies and rejects any ambiguity: two policies
// of one scope (namespace and prefix) whose ranges overlap are refused
// whatever their versions. Versions are opaque labels and are never
// compared or sorted, so "2" and "10" cannot silently select the wrong
// policy; a deployment that moves a namespace to a new version gives the
// versions disjoint ranges, or another prefix, explicitly.
func NewPolicySet(policies []ConceptNamespacePolicy) (*PolicySet, error) {
	list, err := checkPolicies(policies)
	if err != nil {
		return nil, err
	}
	return &PolicySet{list: list}, nil
}

// checkPolicies validates policies and returns them sorted by scope and
// range. It runs in the service and again inside Apply, which trusts no
// proposer; it is deterministic (sorting a copy, no map).
func checkPolicies(policies []ConceptNamespacePolicy) ([]ConceptNamespacePolicy, error) {
	if len(policies) > MaxPolicies {
		return nil, errs.Errorf(errs.CodeInvalid, "authority: %d policies, more than %d", len(policies), MaxPolicies)
	}
	for _, p := range policies {
		if !validNamespace(p.Namespace) {
			return nil, errs.Errorf(errs.CodeInvalid, "authority: policy namespace %q is not upper-case A-Z0-9 starting with a letter", p.Namespace)
		}
		if p.Prefix != "" && !validPrefix(p.Prefix) {
			return nil, errs.Errorf(errs.CodeInvalid, "authority: policy %s: prefix %q is not upper-case segments (A-Z then A-Z0-9) joined by hyphens, at most %d characters", p.Namespace, p.Prefix, MaxPrefixLen)
		}
		if p.Min < 1 || p.Max < p.Min || p.Max >= 1e18 {
			return nil, errs.Errorf(errs.CodeInvalid, "authority: policy %s v%s: range %d..%d must satisfy 1 <= min <= max < 10^18", p.Scope(), p.PolicyVersion, p.Min, p.Max)
		}
		if err := bounds.Identifier("policy_version", p.PolicyVersion); err != nil {
			return nil, errs.Errorf(errs.CodeInvalid, "authority: policy %s: %v", p.Scope(), err)
		}
	}
	list := slices.Clone(policies)
	slices.SortStableFunc(list, comparePolicies)
	for i := 1; i < len(list); i++ { // the first overlap names the error, every time
		a, b := list[i-1], list[i]
		if a.Namespace == b.Namespace && a.Prefix == b.Prefix && b.Min <= a.Max {
			return nil, errs.Errorf(errs.CodeInvalid, "authority: ambiguous policies for %s: v%s (%d..%d) and v%s (%d..%d) overlap; give versions disjoint ranges or prefixes",
				a.Scope(), a.PolicyVersion, a.Min, a.Max, b.PolicyVersion, b.Min, b.Max)
		}
	}
	return list, nil
}

// comparePolicies orders by namespace, prefix, then range.
func comparePolicies(a, b ConceptNamespacePolicy) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	if c := strings.Compare(a.Prefix, b.Prefix); c != 0 {
		return c
	}
	return cmp.Compare(a.Min, b.Min)
}

// Select returns the one policy that covers id.
func (ps *PolicySet) Select(id ConceptID) (ConceptNamespacePolicy, error) {
	return selectPolicy(ps.list, id)
}

// selectPolicy finds the policy of id in list (sorted, without overlaps)
// by binary search: the first policy of id's scope whose range does not
// end below id's number, if it starts at or below it.
func selectPolicy(list []ConceptNamespacePolicy, id ConceptID) (ConceptNamespacePolicy, error) {
	i := sort.Search(len(list), func(i int) bool {
		c := cmp.Or(strings.Compare(list[i].Namespace, id.Namespace), strings.Compare(list[i].Prefix, id.Prefix))
		return c > 0 || (c == 0 && list[i].Max >= id.Number)
	})
	if i < len(list) && list[i].Namespace == id.Namespace && list[i].Prefix == id.Prefix && list[i].Min <= id.Number {
		return list[i], nil
	}
	return ConceptNamespacePolicy{}, errs.Errorf(errs.CodeInvalid, "no concept namespace policy covers %s", id)
}

// Policies lists the set's policies by namespace, prefix and range.
func (ps *PolicySet) Policies() []ConceptNamespacePolicy {
	return slices.Clone(ps.list)
}

// NewVersionedPolicySet is NewPolicySet for a set of the given version,
// which orders it against the cluster's replicated set when it seeds it
// (see policyset.go).
func NewVersionedPolicySet(version uint64, policies []ConceptNamespacePolicy) (*PolicySet, error) {
	if version > maxSetVersion {
		return nil, errs.Errorf(errs.CodeInvalid, "authority: policy set version %d is above %d", version, uint64(maxSetVersion))
	}
	ps, err := NewPolicySet(policies)
	if ps != nil {
		ps.version = version
	}
	return ps, err
}

// Version is the set's version (0 for an unversioned set).
func (ps *PolicySet) Version() uint64 { return ps.version }

// PolicyFile is the versioned form of a policy file.
type PolicyFile struct {
	Version  uint64                   `json:"version"`
	Policies []ConceptNamespacePolicy `json:"policies"`
}

// LoadPolicyFile reads a policy file, as `arbiter serve
// --concept-policies` takes it: a versioned set,
//
//	{"version": 3, "policies": [{"namespace": "RMDD", "min": 1, "max": 9999, "policy_version": "2"},
//	                            {"namespace": "RMDD", "prefix": "SEARCH", "min": 1, "max": 999, "policy_version": "s1"}]}
//
// or a bare array of policies, which is version 0.
func LoadPolicyFile(path string) (*PolicySet, error) {
	raw, err := readPolicyFile(path)
	if err != nil {
		return nil, fmt.Errorf("authority: policy file %w", err)
	}
	var f PolicyFile
	if trimmed := bytes.TrimLeft(raw, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		err = strictjson.Decode(raw, &f.Policies)
	} else {
		err = strictjson.Decode(raw, &f)
	}
	if err != nil {
		return nil, fmt.Errorf("authority: policy file %s: %w", path, err)
	}
	return NewVersionedPolicySet(f.Version, f.Policies)
}

// readPolicyFile reads at most strictjson.MaxFileBytes of the file.
func readPolicyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, strictjson.MaxFileBytes+1))
	if err == nil && len(raw) > strictjson.MaxFileBytes {
		err = fmt.Errorf("%s: larger than %d bytes", path, strictjson.MaxFileBytes)
	}
	return raw, err
}
