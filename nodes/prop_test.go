package nodes_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/nodes"
)

func TestProp(t *testing.T) {
	n := nodes.Record{NodeID: "RMDD-27", Properties: map[string]json.RawMessage{
		"owner": json.RawMessage(`"host-a"`), "fence": json.RawMessage(`18446744073709551615`), "tags": json.RawMessage(`["a","b"]`)}}
	if owner, ok, err := nodes.Prop[string](n, "owner"); owner != "host-a" || !ok || err != nil {
		t.Errorf("owner: %q %v %v", owner, ok, err)
	}
	if fence, ok, err := nodes.Prop[uint64](n, "fence"); fence != 1<<64-1 || !ok || err != nil {
		t.Errorf("fence: %d %v %v", fence, ok, err)
	}
	if tags, _, err := nodes.Prop[[]string](n, "tags"); len(tags) != 2 || err != nil {
		t.Errorf("tags: %v %v", tags, err)
	}
	if _, ok, err := nodes.Prop[string](n, "absent"); ok || err != nil {
		t.Errorf("absent: %v %v", ok, err)
	}
	if _, ok, err := nodes.Prop[int](n, "owner"); !ok || !errors.Is(err, errs.Invalid) {
		t.Errorf("a string read as an int: %v %v", ok, err)
	}
}
