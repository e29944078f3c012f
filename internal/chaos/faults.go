package chaos

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// Fault is one kind of injected failure.
type Fault struct {
	Name string
	// Inject starts the fault on a healthy cluster and returns what ends
	// it. The harness keeps the fault in force for a while (clients keep
	// running), then calls heal and waits for the cluster to make
	// progress again.
	Inject func(e *Env) (heal func())
}

// Env is what a fault acts on.
type Env struct {
	C   *clustertest.Cluster
	Rng *rand.Rand
	// Mark annotates the history's visualization.
	Mark func(format string, args ...any)
	// WaitWrites waits until clients have made n more state-changing
	// calls (or a bound passes) and reports whether they did.
	WaitWrites func(n int64) bool
	// Errorf fails the run.
	Errorf func(format string, args ...any)
	// TakeoverBound bounds the wait for a new leader while a fault cuts
	// the old one off (Config.TakeoverBound; 0: the package's timeout).
	TakeoverBound time.Duration
}

const timeout = 20 * time.Second

// leader is the agreed leader's index.
func (e *Env) leader() int { return e.C.WaitLeader(timeout) }

// follower is a random running node other than the leader.
func (e *Env) follower() int {
	l := e.leader()
	var fs []int
	for _, i := range e.C.Running() {
		if i != l {
			fs = append(fs, i)
		}
	}
	return fs[e.Rng.IntN(len(fs))]
}

// others lists every node but the given ones.
func (e *Env) others(not ...int) []int {
	var out []int
	for i := 0; i < e.C.Size(); i++ {
		excluded := false
		for _, n := range not {
			excluded = excluded || i == n
		}
		if !excluded {
			out = append(out, i)
		}
	}
	return out
}

// pauseFor is a pause beyond the election timeout of clustertest's
// nodes (400 ms), long enough for the others to elect a new leader.
const pauseFor = 1500 * time.Millisecond

// Faults is every fault kind, in a fixed order. A run injects each of
// them (in a seeded order) or a random selection (Config.Faults).
var Faults = []Fault{
	{"stop-restart-leader", func(e *Env) func() {
		l := e.leader()
		e.Mark("stop leader n%d", l+1)
		e.C.Stop(l)
		return func() { e.C.Restart(l) }
	}},
	{"stop-restart-follower", func(e *Env) func() {
		f := e.follower()
		e.Mark("stop follower n%d", f+1)
		e.C.Stop(f)
		return func() { e.C.Restart(f) }
	}},
	{"partition-minority", func(e *Env) func() {
		// A minority without the leader: the majority keeps serving.
		l := e.leader()
		minority := e.others(l)[:e.C.Size()/2]
		majority := e.others(minority...)
		e.Mark("partition: minority %v | majority %v", names(minority), names(majority))
		e.C.Partition(minority, majority)
		return e.C.Heal
	}},
	{"partition-leader-in-minority", func(e *Env) func() {
		// The leader and as many others as stay a minority, against a
		// majority that must elect a new leader while the old one may
		// still believe it leads.
		l := e.leader()
		minority := append([]int{l}, e.others(l)[:(e.C.Size()-1)/2-1]...)
		majority := e.others(minority...)
		e.Mark("partition: leader's minority %v | majority %v", names(minority), names(majority))
		e.C.Partition(minority, majority)
		return func() {
			e.requireTakeover("partition-leader-in-minority", l, majority)
			e.C.Heal()
		}
	}},
	{"isolate-leader", func(e *Env) func() {
		l := e.leader()
		e.Mark("isolate leader n%d", l+1)
		e.C.Isolate(l)
		return func() {
			e.requireTakeover("isolate-leader", l, e.others(l))
			e.C.Heal()
		}
	}},
	{"one-way-leader-out", func(e *Env) func() {
		// The leader can no longer reach anyone, but hears them: followers
		// time out and elect, and the old leader learns of it only from
		// their requests.
		l := e.leader()
		e.Mark("one-way: n%d -> everyone cut", l+1)
		for _, o := range e.others(l) {
			e.C.CutOneWay(l, o)
		}
		return func() {
			e.requireTakeover("one-way-leader-out", l, e.others(l))
			e.C.Heal()
		}
	}},
	{"one-way-into-leader", func(e *Env) func() {
		// One follower's requests and replies to the leader are lost,
		// while the leader still reaches it.
		l, f := e.leader(), e.follower()
		e.Mark("one-way: n%d -> n%d cut", f+1, l+1)
		e.C.CutOneWay(f, l)
		return e.C.Heal
	}},
	{"delay", func(e *Env) func() {
		d := time.Duration(50+e.Rng.IntN(250)) * time.Millisecond
		e.Mark("delay every message up to %v", d)
		e.C.Delay(d)
		return func() { e.C.Delay(0) }
	}},
	{"pause-leader", func(e *Env) func() {
		l := e.leader()
		e.Mark("pause leader n%d", l+1)
		e.C.Pause(l)
		time.Sleep(pauseFor)
		return func() {
			e.requireTakeover("pause-leader", l, e.others(l))
			e.C.Resume(l)
		}
	}},
	{"pause-follower", func(e *Env) func() {
		f := e.follower()
		e.Mark("pause follower n%d", f+1)
		e.C.Pause(f)
		time.Sleep(pauseFor)
		return func() { e.C.Resume(f) }
	}},
	{"leadership-transfer", func(e *Env) func() {
		l := e.leader()
		now := e.C.TransferLeadership(timeout)
		e.Mark("leadership n%d -> n%d", l+1, now+1)
		return func() {}
	}},
	{"membership-replace-follower", func(e *Env) func() {
		f := e.follower()
		e.Mark("remove n%d, wipe it, join it afresh", f+1)
		e.C.Replace(f, timeout)
		return func() {}
	}},
	{"snapshot-install", injectSnapshotInstall},
	{"clock-skew-leader", func(e *Env) func() { return skewLeader(e, drawSkew(e)) }},
}

// injectSnapshotInstall stops a follower, waits until the leader has
// compacted its log past everything the follower has, and restarts it:
// it can only catch up by installing the leader's snapshot, which heal
// requires.
func injectSnapshotInstall(e *Env) func() {
	f := e.follower()
	had := e.C.RaftStat(f, "last_log_index")
	e.Mark("stop n%d at log index %d", f+1, had)
	e.C.Stop(f)
	// The cluster keeps TrailingLogs entries after a snapshot (see
	// Config), so the leader must have snapshotted beyond had+trailing.
	var snap uint64
	for tries := 0; tries < 50; tries++ {
		l := e.leader()
		if snap = e.C.Snapshot(l); snap > had+trailingLogs {
			break
		}
		e.WaitWrites(trailingLogs / 4)
	}
	if snap <= had+trailingLogs {
		e.Errorf("snapshot-install: the leader's snapshot reached only index %d, the follower had %d", snap, had)
	}
	return func() {
		e.C.Restart(f)
		if !e.C.Eventually(timeout, func() bool { return e.C.RaftStat(f, "last_snapshot_index") >= snap }) {
			e.Errorf("snapshot-install: n%d caught up without installing the snapshot at %d (its last is %d)", f+1, snap, e.C.RaftStat(f, "last_snapshot_index"))
		}
		e.Mark("n%d installed a snapshot at %d or later", f+1, snap)
	}
}

// requireTakeover fails the run unless a node of among, not old, leads
// while the fault still holds: the proof that the fault cut old off as it
// claims to. (A fault that silently does nothing passes every other
// check.)
func (e *Env) requireTakeover(fault string, old int, among []int) {
	bound := e.TakeoverBound
	if bound == 0 {
		bound = timeout
	}
	took := e.C.Eventually(bound, func() bool {
		for _, i := range among {
			if n := e.C.Node(i); i != old && n != nil && n.IsLeader() {
				return true
			}
		}
		return false
	})
	if !took {
		e.Errorf("%s: no node of %v took over from n%d while the fault held: it did not cut n%d off", fault, names(among), old+1, old+1)
	}
}

func names(idx []int) []string {
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = fmt.Sprintf("n%d", i+1)
	}
	return out
}

// BrokenIsolation claims to isolate the leader but leaves it alone: the
// control that shows requireTakeover catches a fault that does not do
// what it says. Never in a real run.
func BrokenIsolation() Fault {
	return Fault{"broken-isolate-leader", func(e *Env) func() {
		l := e.leader()
		e.Mark("pretend to isolate leader n%d", l+1)
		return func() { e.requireTakeover("broken-isolate-leader", l, e.others(l)) }
	}}
}
