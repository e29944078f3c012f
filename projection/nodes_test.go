package projection_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/projection"
)

// publishOnce submits an envelope at watermark w and publishes it under a
// fresh lease, through node i; it returns the lease and the publication.
func (pc *pcluster) publishOnce(i int, id string, w uint64) (projection.Lease, projection.PublishResult, []byte) {
	pc.t.Helper()
	sub := projection.SubmitRequest{TargetID: id, Channel: projection.ChannelComputedRoute, SourceWatermark: w,
		Envelope: envelope(projection.ChannelComputedRoute, w, time.Now().Add(time.Hour).UnixMilli(), strings.Repeat("w", int(w)))}
	pc.call(i, router.ID, http.MethodPost, "/v1/projection/channels/submit", sub).want(pc.t, "submit", 200, "", nil)
	var l projection.Lease
	pc.call(i, agent.ID, http.MethodPost, "/v1/projection/leases/acquire", projection.AcquireRequest{TargetID: id, HolderInstanceDigest: digest("h")}).want(pc.t, "acquire", 200, "", &l)
	var p projection.PublishResult
	pc.call(i, agent.ID, http.MethodPost, "/v1/projection/publish", fenceOf(&l)).want(pc.t, "publish", 200, "", &p)
	cur := pc.call(i, agent.ID, http.MethodGet, "/v1/projection/targets/"+id+"/current", nil)
	cur.want(pc.t, "current", 200, "", nil)
	return l, p, bytes.TrimSpace(cur.body)
}

// The raw token never reaches the raft log, a snapshot or a backup: only
// its SHA-256 does.
func TestTokenNeverInLogOrSnapshots(t *testing.T) {
	pc := newPCluster(t, roots(t, 3), clustertest.Options{})
	id := pc.setup(60_000, "secret")
	var tokens [][]byte
	for w := uint64(1); w <= 3; w++ {
		l, _, _ := pc.publishOnce(int(w)%3, id, w)
		raw, _ := hex.DecodeString(l.Token)
		tokens = append(tokens, []byte(l.Token), []byte(strings.ToUpper(l.Token)), raw)
	}
	var held projection.Lease
	pc.call(0, agent.ID, http.MethodPost, "/v1/projection/leases/acquire", projection.AcquireRequest{TargetID: id, HolderInstanceDigest: digest("h")}).want(t, "acquire", 200, "", &held)
	pc.call(1, agent.ID, http.MethodPost, "/v1/projection/leases/release", fenceOf(&held)).want(t, "release", 200, "", nil)
	raw, _ := hex.DecodeString(held.Token)
	tokens = append(tokens, []byte(held.Token), raw)
	pc.WaitConverged(10 * time.Second)
	var backup bytes.Buffer
	leader := pc.WaitLeader(10 * time.Second)
	if err := pc.Node(leader).Backup(context.Background(), &backup); err != nil {
		t.Fatal(err)
	}
	scanned, hashes := 0, 0
	heldHash := sha256.Sum256(raw)
	for i := range pc.roots {
		pc.Snapshot(i)
		err := filepath.WalkDir(pc.dataDir[i], func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			scanned += len(b)
			if bytes.Contains(b, []byte(hex.EncodeToString(heldHash[:]))) {
				hashes++
			}
			for _, tok := range tokens {
				if bytes.Contains(b, tok) {
					t.Errorf("%s holds a lease token", path)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tok := range tokens {
		if bytes.Contains(backup.Bytes(), tok) {
			t.Error("the backup holds a lease token")
		}
	}
	// The scan saw the log and the snapshots: the token's hash is there.
	if scanned == 0 || hashes == 0 || !bytes.Contains(backup.Bytes(), []byte(id)) {
		t.Fatalf("scanned %d bytes, %d files with the token's hash; the backup lacks the target", scanned, hashes)
	}
}

// A node without a root writes nothing; a node whose root is read-only
// fails closed: the command succeeds, the node logs, counts (/metrics)
// and reports the failure (/v1/cluster/status), and the other nodes
// write.
func TestNodesWithoutOrWithUnwritableRoots(t *testing.T) {
	const readOnly = "/sys" // read-only to every user, root included
	if err := os.Mkdir(filepath.Join(readOnly, projection.ProjectionsDir), 0o755); err == nil {
		_ = os.Remove(filepath.Join(readOnly, projection.ProjectionsDir))
		t.Skip(readOnly + " is writable here")
	}
	cwd := t.TempDir()
	t.Chdir(cwd)
	pc := newPCluster(t, []string{t.TempDir(), "", readOnly}, clustertest.Options{})
	id := pc.setup(60_000, "roots")
	_, pub, body := pc.publishOnce(1, id, 1)
	if pub.File != projection.FileNone {
		t.Errorf("publish through n2, without a root: file %q, want %q", pub.File, projection.FileNone)
	}
	if !pc.Eventually(10*time.Second, func() bool { return bytes.Equal(pc.file(0, id), body) }) {
		t.Fatalf("n1 did not write: %s", pc.file(0, id))
	}
	var st cluster.Status
	ok := pc.Eventually(10*time.Second, func() bool {
		pc.call(2, reader.ID, http.MethodGet, "/v1/cluster/status", nil).want(t, "status", 200, "", &st)
		return st.Effects.Failures > 0
	})
	if !ok || st.Effects.LastFailure == nil || st.Effects.LastFailure.Effect != "projection publish" || !strings.Contains(st.Effects.LastFailure.Error, id) {
		t.Fatalf("n3's status does not report the failed write: %+v", st.Effects)
	}
	metrics := pc.call(2, reader.ID, http.MethodGet, "/metrics", nil).body // any principal may read them
	if !bytes.Contains(metrics, []byte("arbiter_fsm_effect_failures_total 1")) {
		t.Fatalf("n3's metrics do not count the failed write")
	}
	for _, i := range []int{0, 1} {
		pc.call(i, reader.ID, http.MethodGet, "/v1/cluster/status", nil).want(t, "status", 200, "", &st)
		if st.Effects.Failures != 0 {
			t.Fatalf("n%d reports effect failures: %+v", i+1, st.Effects)
		}
	}
	// n2, without a root, created nothing anywhere it could have.
	for _, dir := range []string{cwd, pc.dataDir[1]} {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && (d.Name() == projection.ProjectionsDir || d.Name() == projection.CurrentFile) {
				t.Errorf("n2 without a root wrote %s", path)
			}
			return nil
		})
	}
	if pub.PublicationSeq == 0 {
		t.Fatal("no publication")
	}
}

// pollSeq reads node i's current.json in a loop until stop, recording
// every publication_seq it sees in order.
func (pc *pcluster) pollSeq(i int, id string, stop *atomic.Bool, wg *sync.WaitGroup) *[]uint64 {
	var seen []uint64
	path, _ := projection.TargetPath(pc.roots[i], id)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			b, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			var head struct {
				PublicationSeq uint64 `json:"publication_seq"`
			}
			if json.Unmarshal(b, &head) != nil {
				seen = append(seen, 0) // torn: fails the monotonicity check
				continue
			}
			if len(seen) == 0 || seen[len(seen)-1] != head.PublicationSeq {
				seen = append(seen, head.PublicationSeq)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return &seen
}

// waitEvent waits until node i's writer has reported publication seq.
func (pc *pcluster) waitEvent(i int, seq uint64) {
	pc.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, e := range pc.ev.of(i) {
			if e.Kind != projection.EventGranted && e.PublicationSeq == seq {
				return
			}
		}
		if time.Now().After(deadline) {
			pc.t.Fatalf("node %d never reported publication %d", i, seq)
		}
		time.Sleep(time.Millisecond)
	}
}

func mustParse(t *testing.T, b []byte) (*projection.Publication, uint64) {
	t.Helper()
	p, err := projection.ParsePublication(b)
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return p, p.PublicationSeq
}

func increasing(seqs []uint64) bool {
	for k := 1; k < len(seqs); k++ {
		if seqs[k] <= seqs[k-1] {
			return false
		}
	}
	return true
}

// A node restarted with an older file catches up; one restarted with the
// newest file, which replays older publications from its log (and loads
// a snapshot first), never writes an older one: a reader of its file
// sees publication_seq only increase.
func TestRestartNeverRegresses(t *testing.T) {
	pc := newPCluster(t, roots(t, 3), clustertest.Options{})
	id := pc.setup(60_000, "restart")
	var stop atomic.Bool
	var wg sync.WaitGroup
	seen := pc.pollSeq(2, id, &stop, &wg)
	defer func() { stop.Store(true); wg.Wait() }()

	_, _, first := pc.publishOnce(0, id, 1)
	pc.waitFiles(id, first)
	pc.Snapshot(2)
	_, _, second := pc.publishOnce(0, id, 2)
	pc.waitFiles(id, second)

	// n3 restarts with the newest file: its snapshot (publication 1) and
	// the log after it (publication 2) are replayed; nothing is written.
	_, p1 := mustParse(t, first)
	_, p2 := mustParse(t, second)
	// A writer reports a write once its file is in place: wait for n3's
	// report of publication 2 too, or it may land after before is taken.
	pc.waitEvent(2, p2)
	before := len(pc.ev.of(2))
	pc.Stop(2)
	pc.Restart(2)
	pc.WaitConverged(10 * time.Second)
	var replayed []string
	for _, e := range pc.ev.of(2)[before:] {
		if e.Kind == projection.EventGranted {
			continue
		}
		replayed = append(replayed, fmt.Sprintf("%s %d restored=%t", e.Kind, e.PublicationSeq, e.Restored))
	}
	want := []string{fmt.Sprintf("skipped %d restored=true", p1), fmt.Sprintf("skipped %d restored=false", p2)}
	if !slices.Equal(replayed, want) {
		t.Fatalf("n3's restart did %v, want %v", replayed, want)
	}
	// n3 stopped while others publish: it restarts with an older file.
	pc.Stop(2)
	_, _, third := pc.publishOnce(0, id, 3)
	_, _, fourth := pc.publishOnce(1, id, 4)
	if !bytes.Equal(pc.file(2, id), second) {
		t.Fatalf("a stopped node's file changed: %s", pc.file(2, id))
	}
	pc.Restart(2)
	pc.waitFiles(id, fourth)
	stop.Store(true)
	wg.Wait()
	if !increasing(*seen) || len(*seen) < 3 {
		t.Fatalf("n3's current.json went through publications %v: not strictly increasing", *seen)
	}
	for _, e := range pc.ev.of(2) {
		if e.Kind == projection.EventFailed {
			t.Errorf("n3: %+v", e)
		}
	}
	_ = third
}

// Restoring an older backup rolls the state back but never a file, and
// never reissues an epoch: the next grant is above every earlier one and
// its publication replaces the files.
func TestRestoreNeverRegresses(t *testing.T) {
	pc := newPCluster(t, roots(t, 3), clustertest.Options{})
	id := pc.setup(60_000, "restore")
	_, p1, first := pc.publishOnce(0, id, 1)
	pc.waitFiles(id, first)
	leader := pc.WaitLeader(10 * time.Second)
	var backup bytes.Buffer
	if err := pc.Node(leader).Backup(context.Background(), &backup); err != nil {
		t.Fatal(err)
	}
	l2, p2, second := pc.publishOnce(1, id, 2)
	pc.waitFiles(id, second)

	leader = pc.WaitLeader(10 * time.Second)
	if _, err := pc.Node(leader).Restore(context.Background(), bytes.NewReader(backup.Bytes())); err != nil {
		t.Fatalf("restore: %v", err)
	}
	pc.WaitConverged(10 * time.Second)
	cur := pc.call(2, agent.ID, http.MethodGet, "/v1/projection/targets/"+id+"/current", nil)
	if !bytes.Equal(bytes.TrimSpace(cur.body), first) {
		t.Fatalf("the restored state's publication is not the backup's: %s", cur)
	}
	for i := range pc.roots {
		if !bytes.Equal(pc.file(i, id), second) {
			t.Fatalf("n%d's file went back with the restore: %s", i+1, pc.file(i, id))
		}
	}
	l3, p3, third := pc.publishOnce(2, id, 3)
	if l3.FencingEpoch <= l2.FencingEpoch || p3.PublicationSeq <= p2.PublicationSeq || p2.PublicationSeq <= p1.PublicationSeq {
		t.Fatalf("after a restore: epoch %d after %d, publication %d after %d", l3.FencingEpoch, l2.FencingEpoch, p3.PublicationSeq, p2.PublicationSeq)
	}
	pc.waitFiles(id, third)
}
