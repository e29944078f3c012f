package authority

import (
	"fmt"
	"sort"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/internal/strictjson"
)

// ConceptNamespacePolicy says which numbers of a namespace the authority
// hands out, under which policy version. The deployment supplies them.
type ConceptNamespacePolicy struct {
	Namespace     string `json:"namespace"`
	Min           uint64 `json:"min"`
	Max           uint64 `json:"max"`
	PolicyVersion string `json:"policy_version"`
}

// PolicySet is a validated set of policies in which every concept id
// matches at most one policy.
type PolicySet struct {
	byNamespace map[string][]ConceptNamespacePolicy // sorted by Min
}

// NewPolicySet validates policies and rejects any ambiguity: two policies
// of one namespace whose ranges overlap are refused whatever their
// versions. Versions are opaque labels and are never compared or sorted,
// so "2" and "10" cannot silently select the wrong policy; a deployment
// that moves a namespace to a new version gives the versions disjoint
// ranges explicitly.
func NewPolicySet(policies []ConceptNamespacePolicy) (*PolicySet, error) {
	ps := &PolicySet{byNamespace: map[string][]ConceptNamespacePolicy{}}
	for _, p := range policies {
		if !validNamespace(p.Namespace) {
			return nil, fmt.Errorf("authority: policy namespace %q is not upper-case A-Z0-9 starting with a letter", p.Namespace)
		}
		if p.Min < 1 || p.Max < p.Min || p.Max >= 1e18 {
			return nil, fmt.Errorf("authority: policy %s v%s: range %d..%d must satisfy 1 <= min <= max < 10^18", p.Namespace, p.PolicyVersion, p.Min, p.Max)
		}
		if err := bounds.Identifier("policy_version", p.PolicyVersion); err != nil {
			return nil, fmt.Errorf("authority: policy %s: %v", p.Namespace, err)
		}
		ps.byNamespace[p.Namespace] = append(ps.byNamespace[p.Namespace], p)
	}
	namespaces := make([]string, 0, len(ps.byNamespace))
	for ns := range ps.byNamespace {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces) // the first overlap names the error, every time
	for _, ns := range namespaces {
		list := ps.byNamespace[ns]
		sort.Slice(list, func(i, j int) bool { return list[i].Min < list[j].Min })
		for i := 1; i < len(list); i++ {
			a, b := list[i-1], list[i]
			if b.Min <= a.Max {
				return nil, fmt.Errorf("authority: ambiguous policies for %s: v%s (%d..%d) and v%s (%d..%d) overlap; give versions disjoint ranges",
					ns, a.PolicyVersion, a.Min, a.Max, b.PolicyVersion, b.Min, b.Max)
			}
		}
	}
	return ps, nil
}

// Select returns the one policy that covers id.
func (ps *PolicySet) Select(id ConceptID) (ConceptNamespacePolicy, error) {
	list := ps.byNamespace[id.Namespace]
	i := sort.Search(len(list), func(i int) bool { return list[i].Max >= id.Number })
	if i < len(list) && list[i].Min <= id.Number {
		return list[i], nil
	}
	return ConceptNamespacePolicy{}, errs.Errorf(errs.CodeInvalid, "no concept namespace policy covers %s", id)
}

// Policies lists the set's policies by namespace and range.
func (ps *PolicySet) Policies() []ConceptNamespacePolicy {
	var out []ConceptNamespacePolicy
	for _, list := range ps.byNamespace {
		out = append(out, list...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Min < out[j].Min
	})
	return out
}

// LoadPolicyFile reads a JSON array of policies, as `arbiter serve
// --concept-policies` takes:
//
//	[{"namespace": "RMDD", "min": 1, "max": 9999, "policy_version": "2"}]
func LoadPolicyFile(path string) (*PolicySet, error) {
	var policies []ConceptNamespacePolicy
	if err := strictjson.DecodeFile(path, &policies); err != nil {
		return nil, fmt.Errorf("authority: policy file %w", err)
	}
	return NewPolicySet(policies)
}
