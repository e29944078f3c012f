package fsm_test

import (
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
)

// rangeModule is a module owning types [first, last] with one command of
// type cmd and one query of type query.
func rangeModule(name string, first, last uint16, cmd log.Type, query fsm.QueryType) fsm.Module {
	return fsm.Module{Name: name, Types: fsm.TypeRange{First: first, Last: last},
		Commands: []fsm.CommandSpec{{Type: cmd, Name: name + "_cmd", MaxVersion: 1, Apply: func(*fsm.Tx, *log.Command) (any, error) { return nil, nil }}},
		Queries:  []fsm.QuerySpec{{Type: query, Name: name + "_query", Run: func(*fsm.ReadTx, []byte) (any, error) { return nil, nil }}},
	}
}

// The composition point (fsm.New) refuses modules whose declared type
// ranges overlap, and a command or query outside its module's range, with
// an error that names what is wrong; modules that keep to disjoint ranges
// compose.
func TestNewRefusesOverlappingRangesAndTypesOutsideTheirRange(t *testing.T) {
	cases := []struct {
		name    string
		modules []fsm.Module
		want    string // "" composes
	}{
		{"disjoint", []fsm.Module{rangeModule("alpha", 900, 909, 900, 901), rangeModule("beta", 910, 919, 919, 910)}, ""},
		{"beside the node primitives", []fsm.Module{nodes.Module(), rangeModule("alpha", 900, 909, 900, 901)}, ""},
		{"overlapping ranges", []fsm.Module{rangeModule("alpha", 900, 909, 900, 901), rangeModule("beta", 905, 919, 915, 916)}, `modules "alpha" (types 900-909) and "beta" (types 905-919) overlap`},
		{"a range inside another", []fsm.Module{rangeModule("alpha", 900, 999, 900, 901), rangeModule("beta", 950, 950, 950, 950)}, "overlap"},
		{"the core's range", []fsm.Module{rangeModule("alpha", 5, 19, 15, 16)}, `modules "core" (types 1-9) and "alpha" (types 5-19) overlap`},
		{"the node primitives' range", []fsm.Module{nodes.Module(), rangeModule("alpha", 99, 109, 100, 101)}, `"nodes" (types 10-99)`},
		{"a command outside its range", []fsm.Module{rangeModule("alpha", 900, 909, 910, 901)}, `module alpha: command "alpha_cmd" type 910 is outside its range 900-909`},
		{"a query outside its range", []fsm.Module{rangeModule("alpha", 900, 909, 900, 899)}, `module alpha: query "alpha_query" type 899 is outside its range 900-909`},
		{"no range", []fsm.Module{rangeModule("alpha", 0, 0, 900, 901)}, "module alpha: declares no type range"},
		{"an upside-down range", []fsm.Module{rangeModule("alpha", 909, 900, 900, 901)}, "module alpha: declares no type range"},
	}
	for _, c := range cases {
		_, err := fsm.New(fsm.Config{Modules: c.modules})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: composed, want an error saying %q", c.name, c.want)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: error %q does not say %q", c.name, err, c.want)
		}
	}
}
