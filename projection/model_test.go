package projection_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/projection"
	"pgregory.net/rapid"
)

// The reference model of targets, channels, leases and publications:
// plain maps and the rules of the issue, one command at a time.
// TestProjectionModel drives the service over a bare FSM (with a runtime
// root) and the model side by side, with snapshot/restore and the
// restore of an older backup among the steps.

type mChannel struct {
	watermark uint64
	body      string
	expires   int64
	captured  int64
	degraded  bool
	conflicts uint64
}

type mLease struct {
	epoch   uint64
	token   string
	expires int64
	state   string // held, released, published
}

type mPublication struct {
	seq, epoch uint64
	at         int64
	statuses   []string // channel=status, in channel order
	sha        string
}

// projModel is the replicated state; index and the files are not (a
// backup restore rolls the state back, never the log or the disk).
type projModel struct {
	now      int64
	ttl      int64
	channels map[string]*mChannel // target/channel
	leases   map[string]*mLease
	pubs     map[string]*mPublication
}

func (m *projModel) clone() *projModel {
	c := &projModel{now: m.now, ttl: m.ttl, channels: map[string]*mChannel{}, leases: map[string]*mLease{}, pubs: map[string]*mPublication{}}
	for k, v := range m.channels {
		cp := *v
		c.channels[k] = &cp
	}
	for k, v := range m.leases {
		cp := *v
		c.leases[k] = &cp
	}
	for k, v := range m.pubs {
		cp := *v
		cp.statuses = slices.Clone(v.statuses)
		c.pubs[k] = &cp
	}
	return c
}

type projMachine struct {
	e        *env
	m        *projModel
	clock    int64  // the proposer's clock
	index    uint64 // the log index of the last entry
	targets  []string
	admits   map[string][]projection.ChannelBinding
	tokens   map[string][]*mLease // every lease ever granted, per target
	epochs   map[uint64]bool      // every epoch ever granted
	fileSeq  map[string]uint64    // what each current.json must hold
	fileSHA  map[string]string
	backups  [][]byte // snapshots taken along the way
	models   []*projModel
	restores int
}

func newProjMachine(t *rapid.T) *projMachine {
	root, err := os.MkdirTemp("", "projection-model-")
	if err != nil {
		t.Fatal(err)
	}
	d := projection.Domain(projection.WithRuntimeRoot(root))
	l, err := fsmtest.New(d.Module())
	if err != nil {
		t.Fatal(err)
	}
	pm := &projMachine{
		e:     &env{l: l, s: projection.NewService(l, l), root: root},
		m:     &projModel{now: fsmtest.Epoch, channels: map[string]*mChannel{}, leases: map[string]*mLease{}, pubs: map[string]*mPublication{}},
		clock: fsmtest.Epoch, admits: map[string][]projection.ChannelBinding{}, tokens: map[string][]*mLease{},
		epochs: map[uint64]bool{}, fileSeq: map[string]uint64{}, fileSHA: map[string]string{},
	}
	for _, b := range [][]projection.ChannelBinding{bothChannels, bothChannels[1:]} {
		res, err := pm.e.s.RegisterTarget(as(agent), projection.TargetRequest{Attested: attested(fmt.Sprint(len(pm.targets))), Channels: b})
		if err != nil {
			t.Fatal(err)
		}
		pm.index++
		pm.targets = append(pm.targets, res.TargetID)
		sorted := slices.Clone(b)
		slices.SortFunc(sorted, func(x, y projection.ChannelBinding) int { return cmpStr(x.Channel, y.Channel) })
		pm.admits[res.TargetID] = sorted
	}
	return pm
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// stamp is what the FSM does with every command's stamp.
func (pm *projMachine) stamp() {
	pm.index++
	pm.m.now = max(pm.m.now, pm.clock)
}

func (pm *projMachine) configure(t *rapid.T) {
	ttl := rapid.SampledFrom([]int64{1000, 3000, 10_000}).Draw(t, "ttl")
	res, err := pm.e.s.SetConfig(as(admin), projection.ConfigRequest{LeaseTTLMs: ttl})
	pm.stamp()
	if err != nil || res.Changed != (pm.m.ttl != ttl) {
		t.Fatalf("set ttl %d: %+v %v (was %d)", ttl, res, err, pm.m.ttl)
	}
	pm.m.ttl = ttl
}

func (pm *projMachine) advance(t *rapid.T) {
	pm.clock += rapid.Int64Range(0, 4000).Draw(t, "ms")
	pm.e.l.SetClock(pm.clock)
}

func (pm *projMachine) submit(t *rapid.T) {
	target := rapid.SampledFrom(pm.targets).Draw(t, "target")
	channel := rapid.SampledFrom(projection.Channels).Draw(t, "channel")
	who := rapid.SampledFrom([]identity.Principal{router, frontier}).Draw(t, "producer")
	w := rapid.Uint64Range(0, 4).Draw(t, "watermark")
	body := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "body")
	life := rapid.SampledFrom([]int64{-1, 2000, 60_000}).Draw(t, "life")
	expires := max(pm.clock, pm.m.now) + life
	_, err := pm.e.s.Submit(as(who), projection.SubmitRequest{TargetID: target, Channel: channel, SourceWatermark: w,
		Envelope: envelope(channel, w, expires, body)})
	pm.stamp()
	want := pm.modelSubmit(target, channel, who.ID, w, body, expires)
	if errs.CodeOf(err) != want {
		t.Fatalf("submit %s/%s w%d %q by %s: %v, the model says %q", target, channel, w, body, who.ID, err, want)
	}
}

func (pm *projMachine) modelSubmit(target, channel, who string, w uint64, body string, expires int64) errs.Code {
	producer := ""
	for _, b := range pm.admits[target] {
		if b.Channel == channel {
			producer = b.Producer
		}
	}
	if producer == "" || producer != who {
		return errs.CodeForbidden
	}
	key := target + "/" + channel
	c := pm.m.channels[key]
	switch {
	case c == nil || w > c.watermark:
		if expires <= pm.m.now {
			return errs.CodeExpired
		}
		pm.m.channels[key] = &mChannel{watermark: w, body: body, expires: expires, captured: pm.m.now}
		return ""
	case w < c.watermark:
		return projection.CodeStaleWatermark
	case body == c.body && expires == c.expires:
		return ""
	default:
		c.degraded = true
		c.conflicts++
		return errs.CodeConflict
	}
}

func (pm *projMachine) acquire(t *rapid.T) {
	target := rapid.SampledFrom(pm.targets).Draw(t, "target")
	l, err := pm.e.s.Acquire(as(agent), projection.AcquireRequest{TargetID: target, HolderInstanceDigest: digest("h")})
	pm.stamp()
	old := pm.m.leases[target]
	switch {
	case pm.m.ttl == 0:
		wantCode(t, "acquire unconfigured", err, errs.CodeUnavailable)
		return
	case old != nil && old.state == projection.LeaseHeld && pm.m.now < old.expires:
		if errs.CodeOf(err) != errs.CodeConflict || num(errs.From(err).Detail["retry_after_ms"]) != old.expires-pm.m.now {
			t.Fatalf("acquire of a held target: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("acquire: %v (model: free)", err)
	}
	if l.FencingEpoch != pm.index || pm.epochs[l.FencingEpoch] || l.ExpiresAtMs != pm.m.now+pm.m.ttl {
		t.Fatalf("lease %+v; the model says epoch %d (reissued: %t), expiry %d", l, pm.index, pm.epochs[l.FencingEpoch], pm.m.now+pm.m.ttl)
	}
	pm.epochs[l.FencingEpoch] = true
	ml := &mLease{epoch: l.FencingEpoch, token: l.Token, expires: l.ExpiresAtMs, state: projection.LeaseHeld}
	pm.m.leases[target] = ml
	pm.tokens[target] = append(pm.tokens[target], ml)
}

// pickFence picks a lease ever granted on a target (or none), and
// possibly mixes its token with another's epoch.
func (pm *projMachine) pickFence(t *rapid.T) (string, projection.FenceRequest, bool) {
	target := rapid.SampledFrom(pm.targets).Draw(t, "target")
	granted := pm.tokens[target]
	if len(granted) == 0 {
		return target, projection.FenceRequest{}, false
	}
	l := granted[rapid.IntRange(0, len(granted)-1).Draw(t, "lease")]
	req := projection.FenceRequest{TargetID: target, Token: l.token, FencingEpoch: l.epoch}
	if rapid.IntRange(0, 5).Draw(t, "mix") == 0 {
		other := granted[rapid.IntRange(0, len(granted)-1).Draw(t, "other")]
		req.FencingEpoch = other.epoch
	}
	return target, req, true
}

// fenced is the model's current lease when req names it.
func (pm *projMachine) fenced(target string, req projection.FenceRequest) *mLease {
	l := pm.m.leases[target]
	if l == nil || l.epoch != req.FencingEpoch || l.token != req.Token {
		return nil
	}
	return l
}

func (pm *projMachine) publish(t *rapid.T) {
	target, req, ok := pm.pickFence(t)
	if !ok {
		return
	}
	res, err := pm.e.s.Publish(as(agent), req)
	pm.stamp()
	l := pm.fenced(target, req)
	switch {
	case l == nil:
		wantCode(t, "publish with a stale fence", err, errs.CodeStaleFence)
		return
	case l.state == projection.LeasePublished:
		p := pm.m.pubs[target]
		if err != nil || !res.Replayed || res.PublicationSeq != p.seq {
			t.Fatalf("publish retry: %+v %v; the model's publication %+v", res, err, p)
		}
		return
	case l.state == projection.LeaseReleased:
		wantCode(t, "publish after release", err, errs.CodeStaleFence)
		return
	case pm.m.now >= l.expires:
		wantCode(t, "publish after expiry", err, errs.CodeExpired)
		return
	}
	if err != nil || res.PublicationSeq != pm.index || res.FencingEpoch != l.epoch || res.PublishedAtMs != pm.m.now {
		t.Fatalf("publish: %+v %v; the model says seq %d epoch %d at %d", res, err, pm.index, l.epoch, pm.m.now)
	}
	l.state = projection.LeasePublished
	p := &mPublication{seq: pm.index, epoch: l.epoch, at: pm.m.now, sha: res.SHA256}
	for _, b := range pm.admits[target] {
		p.statuses = append(p.statuses, b.Channel+"="+pm.status(target, b.Channel))
	}
	pm.m.pubs[target] = p
	pm.fileSeq[target], pm.fileSHA[target] = p.seq, p.sha
}

func (pm *projMachine) status(target, channel string) string {
	c := pm.m.channels[target+"/"+channel]
	switch {
	case c == nil:
		return projection.StatusEmpty
	case c.degraded:
		return projection.StatusDegraded
	case pm.m.now >= c.expires:
		return projection.StatusExpired
	}
	return projection.StatusFresh
}

func (pm *projMachine) release(t *rapid.T) {
	target, req, ok := pm.pickFence(t)
	if !ok {
		return
	}
	res, err := pm.e.s.Release(as(agent), req)
	pm.stamp()
	l := pm.fenced(target, req)
	if l == nil {
		wantCode(t, "release with a stale fence", err, errs.CodeStaleFence)
		return
	}
	held := l.state == projection.LeaseHeld && pm.m.now < l.expires
	if err != nil || res.Released != held {
		t.Fatalf("release: %+v %v; the model says released %t", res, err, held)
	}
	if held {
		l.state = projection.LeaseReleased
	}
}

// snapshot restores the FSM from its own snapshot: the same state.
func (pm *projMachine) snapshot(t *rapid.T) {
	f := pm.e.l.FSM
	b := fsmtest.Snapshot(t, f)
	index, hash := fsmtest.StateHash(t, f)
	if err := f.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if i, h := fsmtest.StateHash(t, f); i != index || h != hash {
		t.Fatalf("restored state %d %x, was %d %x", i, h, index, hash)
	}
	pm.backups = append(pm.backups, b)
	pm.models = append(pm.models, pm.m.clone())
}

// restoreBackup restores an older snapshot, as an admin restores a
// backup: the state rolls back; the log index, the epochs ever granted
// and the files do not.
func (pm *projMachine) restoreBackup(t *rapid.T) {
	if len(pm.backups) == 0 {
		return
	}
	i := rapid.IntRange(0, len(pm.backups)-1).Draw(t, "backup")
	if err := pm.e.l.FSM.Restore(io.NopCloser(bytes.NewReader(pm.backups[i]))); err != nil {
		t.Fatalf("restore backup: %v", err)
	}
	pm.m = pm.models[i].clone()
	pm.restores++
}

func (pm *projMachine) check(t *rapid.T) {
	t.Helper()
	if now := pm.e.l.FSM.Now(); now != pm.m.now {
		t.Fatalf("FSM time %d, the model's %d", now, pm.m.now)
	}
	for _, target := range pm.targets {
		v, err := pm.e.s.Target(as(agent), target, fsm.Stale)
		if err != nil {
			t.Fatalf("read %s: %v", target, err)
		}
		for i, b := range pm.admits[target] {
			cv := v.Channels[i]
			c := pm.m.channels[target+"/"+b.Channel]
			if cv.Channel != b.Channel || cv.Status != pm.status(target, b.Channel) {
				t.Fatalf("%s %s: %+v, the model says %s", target, b.Channel, cv, pm.status(target, b.Channel))
			}
			if c != nil && (cv.SourceWatermark != c.watermark || cv.ExpiresAtMs != c.expires || cv.CapturedAtMs != c.captured || cv.Conflicts != c.conflicts) {
				t.Fatalf("%s %s: %+v, the model's %+v", target, b.Channel, cv, c)
			}
		}
		l := pm.m.leases[target]
		switch {
		case l == nil && v.Lease != nil, l != nil && v.Lease == nil:
			t.Fatalf("%s lease %+v, the model's %+v", target, v.Lease, l)
		case l != nil:
			state := l.state
			if state == projection.LeaseHeld && pm.m.now >= l.expires {
				state = projection.LeaseExpired
			}
			if v.Lease.FencingEpoch != l.epoch || v.Lease.State != state || v.Lease.ExpiresAtMs != l.expires {
				t.Fatalf("%s lease %+v, the model's %+v (%s)", target, v.Lease, l, state)
			}
		}
		p := pm.m.pubs[target]
		if (p == nil) != (v.LastPublication == nil) || p != nil && (v.LastPublication.PublicationSeq != p.seq || v.LastPublication.SHA256 != p.sha) {
			t.Fatalf("%s publication %+v, the model's %+v", target, v.LastPublication, p)
		}
		pm.checkFile(t, target)
	}
}

// checkFile: current.json holds the newest publication ever written,
// whatever was restored since, and it is whole.
func (pm *projMachine) checkFile(t *rapid.T, target string) {
	b, err := readCurrent(pm.e, target)
	if pm.fileSeq[target] == 0 {
		if err == nil {
			t.Fatalf("%s: a file before any publication", target)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	sum := sha256.Sum256(b)
	p, perr := projection.ParsePublication(b)
	if perr != nil || p.PublicationSeq != pm.fileSeq[target] || hex.EncodeToString(sum[:]) != pm.fileSHA[target] {
		t.Fatalf("%s: current.json holds %s (%v), want publication %d", target, b, perr, pm.fileSeq[target])
	}
	if mp := pm.m.pubs[target]; mp != nil && mp.seq == p.PublicationSeq {
		var got []string
		for _, c := range p.Channels {
			got = append(got, c.Channel+"="+c.Status)
		}
		if !slices.Equal(got, mp.statuses) || p.FencingEpoch != mp.epoch || p.PublishedAtMs != mp.at {
			t.Fatalf("%s: publication %s, the model's %+v", target, b, mp)
		}
	}
}

// TestProjectionModel drives random commands through the service and the
// model; after every step the FSM answers what the model holds, every
// epoch was granted once, and current.json holds the newest publication
// ever made, through snapshots and the restore of older backups.
func TestProjectionModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pm := newProjMachine(rt)
		defer os.RemoveAll(pm.e.root)
		actions := map[string]func(*rapid.T){
			"configure": pm.configure, "advance": pm.advance, "submit": pm.submit, "acquire": pm.acquire,
			"publish": pm.publish, "release": pm.release, "snapshot": pm.snapshot, "restoreBackup": pm.restoreBackup,
		}
		weights := map[string]int{"configure": 1, "advance": 4, "submit": 6, "acquire": 5, "publish": 5, "release": 2, "snapshot": 1, "restoreBackup": 1}
		var names []string
		for _, name := range slices.Sorted(maps.Keys(actions)) {
			for i := 0; i < weights[name]; i++ {
				names = append(names, name)
			}
		}
		for i, n := 0, rapid.IntRange(1, 80).Draw(rt, "steps"); i < n; i++ {
			actions[rapid.SampledFrom(names).Draw(rt, "action")](rt)
			if got := pm.e.l.FSM.AppliedIndex(); got != pm.index && pm.restores == 0 {
				rt.Fatalf("applied index %d, the model's %d", got, pm.index)
			}
			pm.check(rt)
		}
	})
}
