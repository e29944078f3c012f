package nodes

import (
	"encoding/json"

	"github.com/arbiterhq/arbiter/errs"
)

// Prop reads property key of n as a T: ok is false when n has no such
// property, and err is invalid when the stored JSON is not a T. It saves
// each reader a json.Unmarshal of Properties (canonical JSON).
//
//	owner, ok, err := nodes.Prop[string](res.Node, "owner")
//	fence, _, err := nodes.Prop[uint64](res.Node, "fence")
func Prop[T any](n Record, key string) (v T, ok bool, err error) {
	raw, ok := n.Properties[key]
	if !ok {
		return v, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, true, errs.Errorf(errs.CodeInvalid, "property %q of node %q is not a %T: %v", key, n.NodeID, v, err)
	}
	return v, true, nil
}
