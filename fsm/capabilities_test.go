package fsm_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

func caps(domains ...fsm.DomainCaps) fsm.Capabilities { return fsm.Capabilities{Domains: domains} }

func dom(name string, cmds ...fsm.CommandCap) fsm.DomainCaps {
	return fsm.DomainCaps{Name: name, Commands: cmds}
}

func TestIntersectKeepsWhatEverySetServesAtTheLowestVersion(t *testing.T) {
	a := caps(dom("alpha", fsm.CommandCap{Type: 300, Name: "a1", Version: 2}, fsm.CommandCap{Type: 301, Name: "a2", Version: 1}),
		dom("beta", fsm.CommandCap{Type: 400, Name: "b1", Version: 1}))
	b := caps(dom("alpha", fsm.CommandCap{Type: 300, Name: "a1", Version: 1}))
	renamed := caps(dom("alpha", fsm.CommandCap{Type: 300, Name: "other", Version: 3}))
	for _, tc := range []struct {
		name string
		sets []fsm.Capabilities
		want fsm.Capabilities
	}{
		{"none", nil, fsm.Capabilities{}},
		{"one", []fsm.Capabilities{a}, a},
		{"lowest version, common commands", []fsm.Capabilities{a, b}, caps(dom("alpha", fsm.CommandCap{Type: 300, Name: "a1", Version: 1}))},
		{"a member with nothing", []fsm.Capabilities{a, {}}, fsm.Capabilities{}},
		{"same type under another name", []fsm.Capabilities{a, renamed}, fsm.Capabilities{}},
	} {
		if got := fsm.Intersect(tc.sets...); !got.Equal(tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if !a.Allows(300, 2) || a.Allows(300, 3) || a.Allows(300, 0) || a.Allows(999, 1) || !a.HasDomain("beta") || a.HasDomain("gamma") {
		t.Error("Allows/HasDomain disagree with the set")
	}
	if got := b.Missing(a); !slices.Equal(got, []string{"alpha.a1 v2 (has v1)", "alpha.a2", "domain beta"}) {
		t.Errorf("Missing = %q", got)
	}
	if got := a.Missing(b); len(got) != 0 {
		t.Errorf("a covers b, but Missing = %q", got)
	}
}

func TestCapabilitiesValidate(t *testing.T) {
	ok := caps(dom("alpha", fsm.CommandCap{Type: 300, Name: "a1", Version: 1}))
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid set refused: %v", err)
	}
	for name, c := range map[string]fsm.Capabilities{
		"unsorted domains":   caps(dom("b", fsm.CommandCap{Type: 300, Name: "x", Version: 1}), dom("a", fsm.CommandCap{Type: 301, Name: "y", Version: 1})),
		"empty domain":       caps(dom("a")),
		"version 0":          caps(dom("a", fsm.CommandCap{Type: 300, Name: "x", Version: 0})),
		"type twice":         caps(dom("a", fsm.CommandCap{Type: 300, Name: "x", Version: 1}), dom("b", fsm.CommandCap{Type: 300, Name: "y", Version: 1})),
		"unsorted commands":  caps(dom("a", fsm.CommandCap{Type: 301, Name: "x", Version: 1}, fsm.CommandCap{Type: 300, Name: "y", Version: 1})),
		"empty command name": caps(dom("a", fsm.CommandCap{Type: 300, Name: "", Version: 1})),
	} {
		if err := c.Validate(); !errors.Is(err, errs.Invalid) {
			t.Errorf("%s: Validate = %v, want invalid", name, err)
		}
	}
}

// enable applies CmdEnable with c to every FSM at index.
func enable(t *testing.T, index uint64, c fsm.Capabilities, fsms ...*fsm.FSM) {
	t.Helper()
	e := entry(t, index, fsm.CmdEnable, c)
	for _, f := range fsms {
		if res := f.Apply(e).(*fsm.Response); res.Err != nil {
			t.Fatalf("enable: %v", res.Err)
		}
	}
}

func newFSMWith(t *testing.T, modules ...fsm.Module) *fsm.FSM {
	t.Helper()
	f, err := fsm.New(fsm.Config{Modules: modules})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A command outside the enabled set is refused alike by a replica that
// serves it and one that does not: the replicas stay equal.
func TestApplyRefusesWhatIsNotEnabledOnEveryReplica(t *testing.T) {
	serves := newFSMWith(t, nodes.Module())
	lacks := newFSMWith(t)
	enable(t, 1, fsm.Capabilities{}, serves, lacks)
	create := entry(t, 2, nodes.CmdCreate, nodes.CreateCommand{NodeID: "a"})
	for _, f := range []*fsm.FSM{serves, lacks} {
		res := f.Apply(create).(*fsm.Response)
		if errs.CodeOf(res.Err) != errs.CodeUnavailable {
			t.Fatalf("not enabled: %v, want unavailable", res.Err)
		}
		if f.Halted() != nil {
			t.Fatalf("a command that is not enabled halted a replica: %s", f.Halted())
		}
	}
	fsmtest.AssertSameState(t, serves, lacks)
}

// A replica whose binary lacks an enabled command halts at it: nothing
// more is applied, no snapshot is taken, reads are refused, and a
// restore of a state its peers made ends the halt.
func TestReplicaHaltsOnAnEnabledCommandItCannotApply(t *testing.T) {
	serves := newFSMWith(t, nodes.Module())
	lacks := newFSMWith(t)
	enable(t, 1, fsm.ServedBy(nodes.Module()), serves, lacks)
	batch := []*raft.Log{
		entry(t, 2, fsm.CmdTick, fsm.Tick{IdemRetentionMs: 1000, FeedRetain: 16, Budget: 1}),
		entry(t, 3, nodes.CmdCreate, nodes.CreateCommand{NodeID: "a"}),
		entry(t, 4, fsm.CmdTick, fsm.Tick{IdemRetentionMs: 1000, FeedRetain: 16, Budget: 1}),
	}
	serves.ApplyBatch(batch)
	out := lacks.ApplyBatch(batch)
	h := lacks.Halted()
	if h == nil || h.Index != 3 || h.Domain != nodes.Name || h.Command != "node_create" {
		t.Fatalf("halt = %+v, want at index 3 on nodes.node_create", h)
	}
	if lacks.AppliedIndex() != 2 {
		t.Fatalf("applied index %d, want 2 (the entry before the halt)", lacks.AppliedIndex())
	}
	for i, r := range out[1:] {
		if res := r.(*fsm.Response); !errs.IsOutcomeUnknown(res.Err) {
			t.Errorf("entry %d after the halt: %+v, want an unknown outcome", i+3, res)
		}
	}
	if _, err := lacks.Snapshot(); err == nil {
		t.Error("a halted replica took a snapshot")
	}
	if _, err := lacks.Query(identity.Principal{}, fsm.Query{Type: fsm.QueryMembers}); !errors.Is(err, errs.Unavailable) {
		t.Errorf("query on a halted replica: %v, want unavailable", err)
	}
	before, _, _ := lacks.StateHash()
	lacks.Apply(entry(t, 5, fsm.CmdTick, fsm.Tick{IdemRetentionMs: 1000, FeedRetain: 16, Budget: 1}))
	if after, _, _ := lacks.StateHash(); after != before || lacks.AppliedIndex() != 2 {
		t.Fatalf("a halted replica applied more: index %d -> %d", before, after)
	}

	// A state without the domain's rows, made by the peers at a later
	// index, can be installed: the replica goes on from there.
	peer := newFSMWith(t, nodes.Module())
	enable(t, 1, fsm.ServedBy(nodes.Module()), peer)
	peer.Apply(entry(t, 9, fsm.CmdTick, fsm.Tick{IdemRetentionMs: 1000, FeedRetain: 16, Budget: 1}))
	if err := lacks.Restore(io.NopCloser(bytes.NewReader(fsmtest.Snapshot(t, peer)))); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if lacks.Halted() != nil || lacks.AppliedIndex() != 9 {
		t.Fatalf("after restore: halted %v, applied %d", lacks.Halted(), lacks.AppliedIndex())
	}
	// One holding the domain's rows cannot: this binary does not know
	// the table.
	err := lacks.Restore(io.NopCloser(bytes.NewReader(fsmtest.Snapshot(t, serves))))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("unknown table")) {
		t.Fatalf("restore of a state with an unknown domain's rows: %v", err)
	}
}

// Replicas whose binaries know different domains hash equal states
// equally: empty tables are not in the stream.
func TestEqualStatesHashEquallyAcrossBinaries(t *testing.T) {
	more := newFSMWith(t, nodes.Module(), effectModule(&effectLog{}))
	fewer := newFSMWith(t, nodes.Module())
	for _, e := range []*raft.Log{
		entry(t, 1, nodes.CmdCreate, nodes.CreateCommand{NodeID: "a", Labels: []string{"x"}}),
		entry(t, 2, fsm.CmdTick, fsm.Tick{IdemRetentionMs: 1000, FeedRetain: 16, Budget: 4}),
	} {
		more.Apply(e)
		fewer.Apply(e)
	}
	fsmtest.AssertSameState(t, more, fewer)
}

// Module ticks run in name order whatever the registration order, and
// only for enabled domains once a set is enabled.
func TestTicksRunInNameOrderForEnabledDomains(t *testing.T) {
	var order []string
	module := func(name string, typ log.Type) fsm.Module {
		return fsm.Module{Name: name, Types: fsm.TypeRange{First: uint16(typ), Last: uint16(typ)},
			Commands: []fsm.CommandSpec{{Type: typ, Name: name + "_cmd", MaxVersion: 1, Apply: func(*fsm.Tx, *log.Command) (any, error) { return nil, nil }}},
			Tick:     func(*fsm.Tx, int) error { order = append(order, name); return nil }}
	}
	zeta, alpha := module("zeta", 310), module("alpha", 320)
	f := newFSMWith(t, zeta, alpha)
	tick := func(i uint64) {
		f.Apply(entry(t, i, fsm.CmdTick, fsm.Tick{IdemRetentionMs: 1000, FeedRetain: 16, Budget: 1}))
	}
	tick(1)
	if !slices.Equal(order, []string{"alpha", "zeta"}) {
		t.Fatalf("ungated tick order %v, want [alpha zeta]", order)
	}
	order = nil
	enable(t, 2, fsm.ServedBy(zeta), f)
	tick(3)
	if !slices.Equal(order, []string{"zeta"}) {
		t.Fatalf("with only zeta enabled, ticks %v", order)
	}
}

// A module's Restored hook runs after a snapshot replaced the state, with
// the restored state to read.
func TestRestoredHookRunsAfterRestore(t *testing.T) {
	var sawIndex uint64
	mod := nodes.Module()
	mod.Restored = func(rt *fsm.ReadTx) []fsm.Effect {
		index := rt.Index
		return []fsm.Effect{{Name: "catch up", Run: func() error { sawIndex = index; return nil }}}
	}
	src := newFSMWith(t, nodes.Module())
	src.Apply(entry(t, 7, nodes.CmdCreate, nodes.CreateCommand{NodeID: "a"}))
	dst := newFSMWith(t, mod)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(fsmtest.Snapshot(t, src)))); err != nil {
		t.Fatal(err)
	}
	if sawIndex != 7 || dst.EffectRuns() != 1 {
		t.Fatalf("Restored effect saw index %d (runs %d), want 7 (1)", sawIndex, dst.EffectRuns())
	}
}
