package cluster_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// A node's debug bundle holds its status, metrics, goroutines, heap
// profile, configuration and recent log lines, and no secret: the peer
// token appears nowhere in it.
func TestDebugBundle(t *testing.T) {
	const peerToken = "peer-secret-0123456789abcdef"
	c := clustertest.New(t, clustertest.Options{Nodes: 1, Configure: func(_ int, cfg *cluster.Config) {
		cfg.PeerToken = peerToken
	}})
	c.WaitLeader(10 * time.Second)
	r := apiGet(t, apiBase(c, 0)+"/v1/debug/bundle")
	if r.status != http.StatusOK {
		t.Fatalf("bundle: %d %s", r.status, r.body)
	}
	if bytes.Contains(r.body, []byte(peerToken)) {
		t.Fatal("the compressed bundle holds the peer token")
	}
	zr, err := gzip.NewReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(io.LimitReader(tr, 64<<20))
	}
	for name, want := range map[string]string{
		"status.json":    `"node_id"`,
		"config.json":    `"PeerTokenSet": true`,
		"metrics.txt":    "arbiter_raft_term",
		"goroutines.txt": "goroutine profile:",
		"log.jsonl":      `"msg":"became leader"`,
	} {
		if !strings.Contains(string(files[name]), want) {
			t.Errorf("%s lacks %q:\n%.400s", name, want, files[name])
		}
	}
	if len(files["heap.pprof"]) == 0 {
		t.Error("the bundle has no heap profile")
	}
	for name, body := range files {
		if bytes.Contains(body, []byte(peerToken)) {
			t.Errorf("%s holds the peer token", name)
		}
	}
	var st map[string]any
	if err := json.Unmarshal(files["status.json"], &st); err != nil {
		t.Errorf("status.json: %v", err)
	}
}
