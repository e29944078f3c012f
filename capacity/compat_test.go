package capacity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/capacity"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/log"
)

// The fixture in testdata/pregraph is what the binary wrote before cells
// and leases were scoped by graph: the log of a short script (some of it
// before any capability set was enabled, the rest with capacity_acquire
// at version 2 and the other commands at version 1), the snapshot it led
// to and that snapshot's state hash. The tests below hold the binary of
// today to it: the log replays to the same state, and the snapshot loads
// as the default graph. -write-pregraph rewrites it; only a binary from
// before graphs may do that.
var writePregraph = flag.Bool("write-pregraph", false, "rewrite testdata/pregraph (only with a binary from before graphs)")

const pregraphDir = "testdata/pregraph"

// pregraphLog is the fixture's log: each entry's bytes, in index order
// from 1, and the state hash after the last.
type pregraphLog struct {
	Entries   [][]byte `json:"entries"`
	Index     uint64   `json:"index"`
	StateHash []byte   `json:"state_hash"`
}

// pregraphSet is what a cluster of that binary enabled: its served set
// with capacity_acquire at 2 and the other capacity commands at 1.
func pregraphSet() fsm.Capabilities {
	set := fsmtest.AtVersion(fsm.ServedBy(capacity.Module()), capacity.Name, 1)
	for i := range set.Domains {
		if set.Domains[i].Name == capacity.Name {
			for j := range set.Domains[i].Commands {
				if set.Domains[i].Commands[j].Type == capacity.CmdAcquire {
					set.Domains[i].Commands[j].Version = 2
				}
			}
		}
	}
	return set
}

// runPregraphScript drives l through the fixture's script.
func runPregraphScript(t *testing.T, l *fsmtest.Local, s *capacity.Service) {
	t.Helper()
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	update := func(tenant, cell string, caps map[string]uint64) {
		_, err := s.UpdateCell(ctx, capacity.UpdateCellRequest{SchemaVersion: "1", TenantRef: tenant, Cell: capacity.CellSpec{CellID: cell, Capacities: caps}})
		must("update "+tenant+"/"+cell, err)
	}
	acq := func(tenant, key, lease string, ttl int64, ds ...capacity.Demand) *capacity.AcquireResult {
		res, err := s.Acquire(ctx, capacity.AcquireRequest{SchemaVersion: "1", TenantRef: tenant, WorkItemID: "w-" + key, OwnerDigest: "owner-a",
			IdempotencyKey: key, LeaseID: lease, TTLMs: ttl, Demands: ds})
		must("acquire "+key, err)
		return res
	}
	refs := func(ls ...capacity.Lease) []capacity.LeaseRef {
		var out []capacity.LeaseRef
		for _, l := range ls {
			out = append(out, capacity.LeaseRef{LeaseID: l.LeaseID, LeaseEpoch: l.LeaseEpoch, Fence: l.Fence})
		}
		return out
	}
	update("t", "c1", map[string]uint64{"gpu": 4, "mem": 16})
	update("t", "c2", map[string]uint64{"gpu": 2})
	update("u", "c1", map[string]uint64{"gpu": 1})
	k1 := acq("t", "k1", "", 10_000, capacity.Demand{CellID: "c1", ResourceClass: "gpu", Amount: 2}, capacity.Demand{CellID: "c2", ResourceClass: "gpu", Amount: 1})
	acq("t", "k2", "L1", 1_000, capacity.Demand{CellID: "c1", ResourceClass: "mem", Amount: 4})
	must("enable", l.Enable(pregraphSet()))
	acq("u", "k3", "", 500, capacity.Demand{CellID: "c1", ResourceClass: "gpu", Amount: 1})
	acq("t", "k4", "", 500, capacity.Demand{CellID: "c1", ResourceClass: "mem", Amount: 2})
	l.Advance(100 * time.Millisecond)
	renewed, err := s.Renew(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a", Leases: refs(k1.Leases...),
		TTLMs: 20_000, IdempotencyKey: "r1"})
	must("renew", err)
	l.Advance(2 * time.Second)
	page, err := s.Reclaim(ctx, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 1})
	must("reclaim", err)
	if page.NextCursor == "" {
		t.Fatal("the first reclaim page has no cursor")
	}
	_, err = s.Reclaim(ctx, capacity.ReclaimRequest{SchemaVersion: "1", TenantRef: "t", MaxCount: 1, Cursor: page.NextCursor})
	must("reclaim page 2", err)
	_, err = s.Release(ctx, capacity.LeasesRequest{SchemaVersion: "1", TenantRef: "t", OwnerDigest: "owner-a", Leases: refs(renewed.Leases[1]), IdempotencyKey: "rel1"})
	must("release", err)
	acq("t", "k5", "", 60_000, capacity.Demand{CellID: "c2", ResourceClass: "gpu", Amount: 1})
	l.Advance(time.Second)
	res, err := l.Propose(ctx, log.Command{Type: fsm.CmdTick, Version: 1, Payload: log.MustMarshal(fsm.Tick{Budget: 16, FeedRetain: 64, IdemRetentionMs: 1 << 40})})
	must("tick", err)
	if res.Err != nil {
		t.Fatalf("tick: %v", res.Err)
	}
}

func TestWritePregraphFixture(t *testing.T) {
	if !*writePregraph {
		t.Skip("-write-pregraph not set")
	}
	l, s := newService(t)
	runPregraphScript(t, l, s)
	var out pregraphLog
	for _, e := range l.Log() {
		out.Entries = append(out.Entries, e.Data)
	}
	idx, sum := fsmtest.StateHash(t, l.FSM)
	out.Index, out.StateHash = idx, sum[:]
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(pregraphDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pregraphDir, "log.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pregraphDir, "state.snapshot"), fsmtest.Snapshot(t, l.FSM), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readPregraph(t *testing.T) (pregraphLog, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pregraphDir, "log.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lg pregraphLog
	if err := json.Unmarshal(b, &lg); err != nil {
		t.Fatal(err)
	}
	snap, err := os.ReadFile(filepath.Join(pregraphDir, "state.snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	return lg, snap
}

// A log written before graphs replays, entry by entry, to the state it
// led to then: the same state hash and the same snapshot bytes.
func TestPregraphLogReplaysUnchanged(t *testing.T) {
	lg, snap := readPregraph(t)
	l, _ := newService(t)
	for i, e := range lg.Entries {
		if res := l.ApplyRaw(e); res == nil {
			t.Fatalf("entry %d: no response", i+1)
		}
	}
	idx, sum := fsmtest.StateHash(t, l.FSM)
	if idx != lg.Index || !bytes.Equal(sum[:], lg.StateHash) {
		t.Fatalf("the pre-graph log replays to index %d hash %x; it led to index %d hash %x", idx, sum, lg.Index, lg.StateHash)
	}
	if !bytes.Equal(fsmtest.Snapshot(t, l.FSM), snap) {
		t.Fatal("the pre-graph log replays to a snapshot other than the one it wrote")
	}
}

// The pre-graph snapshot loads, keeps its hash, and answers reads.
func TestPregraphSnapshotLoads(t *testing.T) {
	lg, snap := readPregraph(t)
	f := fsmtest.RestoreFresh(t, snap, capacity.Module())
	idx, sum := fsmtest.StateHash(t, f)
	if idx != lg.Index || !bytes.Equal(sum[:], lg.StateHash) {
		t.Fatalf("restored pre-graph snapshot: index %d hash %x, want %d %x", idx, sum, lg.Index, lg.StateHash)
	}
	if !bytes.Equal(fsmtest.Snapshot(t, f), snap) {
		t.Fatal("the restored pre-graph snapshot writes other bytes")
	}
	st := checkStored(t, f)
	if len(st.Cells) != 3 || len(st.Leases) != 6 || !slices.ContainsFunc(st.Leases, func(l capacity.Lease) bool { return l.LeaseID == "L1" }) {
		t.Fatalf("restored pre-graph snapshot holds %d cells and %d leases", len(st.Cells), len(st.Leases))
	}
}
