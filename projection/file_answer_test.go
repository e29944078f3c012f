package projection_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/clustertest"
	"github.com/arbiterhq/arbiter/internal/rawremote"
	"github.com/arbiterhq/arbiter/projection"
)

// submitVia submits an envelope at watermark w through node i.
func (pc *pcluster) submitVia(i int, id string, w uint64) {
	pc.t.Helper()
	sub := projection.SubmitRequest{TargetID: id, Channel: projection.ChannelComputedRoute, SourceWatermark: w,
		Envelope: envelope(projection.ChannelComputedRoute, w, time.Now().Add(time.Hour).UnixMilli(), strings.Repeat("w", int(w)))}
	pc.call(i, router.ID, http.MethodPost, "/v1/projection/channels/submit", sub).want(pc.t, "submit", 200, "", nil)
}

// metric is the value of an unlabelled series on node i's /metrics.
func (pc *pcluster) metric(i int, name string) float64 {
	pc.t.Helper()
	raw := pc.call(i, reader.ID, http.MethodGet, "/metrics", nil).body // any principal may read them
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(raw)
	if m == nil {
		pc.t.Fatalf("node %d exports no %s", i, name)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		pc.t.Fatal(err)
	}
	return v
}

// refusedBeforeConsuming acquires a lease through node i and checks that
// a publish through node i is refused (unavailable) without consuming it:
// the holder's release then ends a lease that was still held.
func (pc *pcluster) refusedBeforeConsuming(i int, id, what string) {
	pc.t.Helper()
	var l projection.Lease
	pc.call(i, agent.ID, http.MethodPost, "/v1/projection/leases/acquire", projection.AcquireRequest{TargetID: id, HolderInstanceDigest: digest("h")}).want(pc.t, "acquire", 200, "", &l)
	r := pc.call(i, agent.ID, http.MethodPost, "/v1/projection/publish", fenceOf(&l))
	r.want(pc.t, what, 503, errs.CodeUnavailable, nil)
	if r.err.OutcomeUnknown {
		pc.t.Fatalf("%s: the refusal says the outcome is unknown: %s", what, r)
	}
	var rel projection.ReleaseResult
	pc.call(i, agent.ID, http.MethodPost, "/v1/projection/leases/release", fenceOf(&l)).want(pc.t, "release", 200, "", &rel)
	if !rel.Released {
		pc.t.Fatalf("%s: the refused publish consumed the lease: %+v", what, rel)
	}
}

// No success without the file: the publish answer says whether the
// serving node's current.json was written; the holder treats "not
// written" as a failure; a node whose write failed retries it on its own
// (counted on /metrics) until it succeeds; a publish on a node that knows
// its root is broken (a failed write not yet retried, or a root that is
// gone) is refused before it consumes the lease.
func TestPublishAnswersWhetherTheServingNodeWroteTheFile(t *testing.T) {
	pc := newPCluster(t, roots(t, 3), clustertest.Options{})
	id := pc.setup(60_000, "answer")
	_, p1, body1 := pc.publishOnce(0, id, 1)
	if p1.File != projection.FileWritten || p1.FileError != "" || !bytes.Equal(pc.file(0, id), body1) {
		t.Fatalf("first publish through n1: %+v; its file %s", p1, pc.file(0, id))
	}

	// n1's target directory becomes a file: its root looks fine, and
	// its next write fails.
	path, _ := projection.TargetPath(pc.roots[0], id)
	dir := filepath.Dir(path)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	pc.submitVia(0, id, 2)
	remote := rawremote.New(pc.URL(0)).WithToken(token(agent.ID))
	h := &projection.Holder{Service: projection.NewService(remote, remote), TargetID: id, InstanceDigest: digest("holder")}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.Publish(ctx)
	if err == nil || res == nil || res.File != projection.FileFailed || !strings.Contains(res.FileError, "not a directory") {
		t.Fatalf("holder publish through n1 with its write failing: %+v, %v", res, err)
	}
	if !errors.Is(err, errs.Unavailable) || errs.IsOutcomeUnknown(err) || !strings.Contains(err.Error(), "not written") {
		t.Fatalf("holder error: %v", err)
	}
	seq := res.PublicationSeq
	wantSeq := []byte(fmt.Sprintf(`"publication_seq":%d`, seq))
	if !pc.Eventually(10*time.Second, func() bool { return bytes.Contains(pc.file(1, id), wantSeq) }) {
		t.Fatalf("n2 did not write publication %d: %s", seq, pc.file(1, id))
	}
	if !bytes.Equal(pc.file(0, id), nil) {
		t.Fatalf("n1 has a file where its target directory was blocked")
	}

	// While the write fails, n1 refuses publishes before they consume
	// the lease, retries the write on its own and counts the retries.
	pc.submitVia(0, id, 3)
	pc.refusedBeforeConsuming(0, id, "publish on a node whose write is failing")
	if !pc.Eventually(20*time.Second, func() bool { return pc.metric(0, "arbiter_fsm_effect_retry_failures_total") >= 1 }) {
		t.Fatal("n1 never retried its failed write")
	}
	if pc.metric(0, "arbiter_fsm_effects_failing") != 1 {
		t.Fatalf("n1's failing effects: %v", pc.metric(0, "arbiter_fsm_effects_failing"))
	}
	var st cluster.Status
	pc.call(0, reader.ID, http.MethodGet, "/v1/cluster/status", nil).want(t, "status", 200, "", &st)
	if st.Effects.Failing != 1 || len(st.Effects.FailingList) != 1 || st.Effects.FailingList[0].Index != seq || st.Effects.Retries == 0 {
		t.Fatalf("n1's status: %+v", st.Effects)
	}

	// Once the way is clear, n1's retry writes the publication.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if !pc.Eventually(40*time.Second, func() bool { return bytes.Equal(pc.file(0, id), pc.file(1, id)) }) {
		t.Fatalf("n1's retry never wrote publication %d: %s", seq, pc.file(0, id))
	}
	if !pc.Eventually(10*time.Second, func() bool { return pc.metric(0, "arbiter_fsm_effects_failing") == 0 }) {
		t.Fatal("n1 still reports a failing write")
	}
	_, p4, body4 := pc.publishOnce(0, id, 4)
	if p4.File != projection.FileWritten || !bytes.Equal(pc.file(0, id), body4) {
		t.Fatalf("publish through n1 after its retry: %+v", p4)
	}

	// A root that is gone is known to be broken before any write fails.
	away := pc.roots[0] + ".away"
	if err := os.Rename(pc.roots[0], away); err != nil {
		t.Fatal(err)
	}
	pc.submitVia(0, id, 5)
	pc.refusedBeforeConsuming(0, id, "publish on a node whose root is gone")
	if err := os.Rename(away, pc.roots[0]); err != nil {
		t.Fatal(err)
	}
	if _, p6, _ := pc.publishOnce(0, id, 6); p6.File != projection.FileWritten {
		t.Fatalf("publish through n1 with its root back: %+v", p6)
	}
}
