package cluster

import (
	"io"
	"math"
	"sync/atomic"
	"time"
)

// Catch-up by design (DESIGN.md: "the log kept behind a snapshot outlasts
// the time a follower needs to install it at the current write rate").
//
// A follower too far behind gets the leader's latest snapshot, which
// covers index S. While it receives and restores it, the leader keeps
// writing and, at its own snapshot cadence, compacts its log down to
// TrailingLogs entries behind its newest snapshot. If that compaction
// passes S before the follower asks for S+1, the follower needs another
// snapshot, and another: a node that restarts under full load with a
// large state may never rejoin (RELIABILITY.md, issue 39). It catches up
// only if TrailingLogs >= write rate x (transfer + restore time).
//
// So every node sizes its TrailingLogs from what it measures, through
// raft's ReloadConfig (read by each compaction): the peak write rate of
// the last minute, and the time to move and restore the newest snapshot
// (its size over the restore speed: this node's own slowest measured
// restore, or plannedRestoreSpeed when that is slower or nothing was
// measured yet), twice over and plus a fixed slack for elections and
// round trips. It never goes below the configured TrailingLogs and never
// above MaxTrailingLogs, which bounds the disk the log may hold.
// Followers size theirs too, so a new leader starts with a fitting value.

// plannedRestoreSpeed is the restore speed, in bytes a second, assumed of
// a follower until a slower one is measured here. Measured on this
// project's 2-core machines: 14 MB/s for a 58 MB snapshot under -race and
// full load, 140 MB/s for 461 MB on an idle node (RELIABILITY.md); the
// planning figure sits at the slow end, since a follower's speed is not
// known to the leader.
const plannedRestoreSpeed = 16 << 20

// catchUpSlack is added to the estimated transfer and restore time: an
// election, heartbeats, and raft's round trips before the follower asks
// for the entries after its snapshot.
const catchUpSlack = 5 * time.Second

// catchUpEvery is how often the sizing runs; rateWindow is how many of
// its samples the peak write rate is taken over.
const (
	catchUpEvery = 2 * time.Second
	rateWindow   = 30
)

// catchUp is the sizing's state: the applied-index samples behind the
// peak rate, and the trailing logs last set.
type catchUp struct {
	rates   [rateWindow]float64
	next    int
	last    uint64
	lastAt  time.Time
	current uint64
}

// trailingLogsFor is the rule: rate x 2 x (size / speed) + rate x slack,
// within [floor, ceiling].
func trailingLogsFor(peakRate float64, snapshotBytes int64, speed float64, floor, ceiling uint64) uint64 {
	if speed <= 0 {
		speed = plannedRestoreSpeed
	}
	secs := 2*float64(snapshotBytes)/speed + catchUpSlack.Seconds()
	want := peakRate * secs
	if math.IsNaN(want) || want < float64(floor) {
		return floor
	}
	if want >= float64(ceiling) {
		return ceiling
	}
	return uint64(math.Ceil(want))
}

// sizeTrailingLogs runs until the node stops.
func (h *raftHost) sizeTrailingLogs() {
	c := &catchUp{current: h.cfg.TrailingLogs, last: h.raft.AppliedIndex(), lastAt: time.Now()}
	t := time.NewTicker(catchUpEvery)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case now := <-t.C:
			h.resizeTrailingLogs(c, now)
		}
	}
}

func (h *raftHost) resizeTrailingLogs(c *catchUp, now time.Time) {
	applied := h.raft.AppliedIndex()
	if dt := now.Sub(c.lastAt).Seconds(); dt > 0 && applied >= c.last {
		c.rates[c.next%rateWindow] = float64(applied-c.last) / dt
		c.next++
	}
	c.last, c.lastAt = applied, now
	peak := 0.0
	for _, r := range c.rates {
		peak = max(peak, r)
	}
	want := trailingLogsFor(peak, h.newestSnapshotBytes(), h.restoreSpeed(), h.cfg.TrailingLogs, h.cfg.MaxTrailingLogs)
	// Change it only when it moves by more than a fifth, or back to the
	// floor: each change is a ReloadConfig and a log line.
	if want == c.current || (want != h.cfg.TrailingLogs && absDiff(want, c.current) <= c.current/5) {
		return
	}
	rc := h.raft.ReloadableConfig()
	rc.TrailingLogs = want
	if err := h.raft.ReloadConfig(rc); err != nil {
		h.logger.Warn("could not resize the trailing logs", "want", want, "err", err)
		return
	}
	h.logger.Info("trailing logs resized so a follower can catch up from a snapshot",
		"trailing_logs", want, "was", c.current, "peak_writes_per_s", int64(peak),
		"snapshot_bytes", h.newestSnapshotBytes(), "restore_bytes_per_s", int64(h.restoreSpeed()))
	c.current = want
	h.trailingLogs.Store(want)
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// newestSnapshotBytes is the size of the newest snapshot in the store (0
// for none, or before the stores are open): what a follower that falls
// behind now would be sent.
func (h *raftHost) newestSnapshotBytes() int64 {
	if h.stores == nil || h.stores.Snapshot == nil {
		return 0
	}
	metas, err := h.stores.Snapshot.List()
	if err != nil || len(metas) == 0 {
		return 0
	}
	return metas[0].Size
}

// restoreSpeed is the speed to plan with: the slower of
// plannedRestoreSpeed and this node's slowest measured restore.
func (h *raftHost) restoreSpeed() float64 {
	measured := math.Float64frombits(h.slowestRestore.Load())
	if measured > 0 && measured < plannedRestoreSpeed {
		return measured
	}
	return plannedRestoreSpeed
}

// TrailingLogs is the number of log entries this node keeps behind its
// newest snapshot now: Config.TrailingLogs, or more while writes and the
// state's size call for it (see catchup.go).
func (n *Node) TrailingLogs() uint64 { return n.host.trailingLogsNow() }

// restoreMeter counts a restore's bytes and records its speed on the
// node, once it took long enough to mean something.
type restoreMeter struct {
	io.ReadCloser
	n       int64
	began   time.Time
	slowest *atomic.Uint64 // float64 bits, bytes a second; 0: none yet
	count   *atomic.Uint64 // successful restores
}

func (r *restoreMeter) Read(p []byte) (int, error) {
	k, err := r.ReadCloser.Read(p)
	r.n += int64(k)
	return k, err
}

// done records the speed of a restore that succeeded: restores of a few
// kilobytes say nothing about a large one and are ignored.
func (r *restoreMeter) done(err error) {
	if err == nil && r.count != nil {
		r.count.Add(1)
	}
	d := time.Since(r.began).Seconds()
	if err != nil || r.slowest == nil || r.n < 1<<20 || d <= 0 {
		return
	}
	speed := float64(r.n) / d
	for {
		old := r.slowest.Load()
		if cur := math.Float64frombits(old); cur > 0 && cur <= speed {
			return
		}
		if r.slowest.CompareAndSwap(old, math.Float64bits(speed)) {
			return
		}
	}
}
