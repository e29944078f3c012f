package cluster

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/prometheus/common/expfmt"
)

// The debug bundle (GET /v1/debug/bundle, admin; arbiter debug bundle):
// what an operator sends with a report, as consul debug gathers it — this
// node's status, metrics, goroutine and heap profiles, configuration with
// its secrets left out, and its recent log lines — as one tar.gz.

// Bounds of the log lines a node keeps for its bundle.
const (
	maxRecentLines     = 2000
	maxRecentLineBytes = 4 << 10
	// maxBundlePart bounds each file of a bundle (a goroutine dump of a
	// node with very many goroutines is cut there).
	maxBundlePart = 32 << 20
)

// logRing keeps the node's last log lines, as JSON, in a bounded ring:
// the log.jsonl of its debug bundle. It is an io.Writer for a
// slog.JSONHandler, which writes each record in one Write.
type logRing struct {
	mu    sync.Mutex
	lines [][]byte
	next  int // where the next line goes once the ring is full
}

func newLogRing() *logRing { return &logRing{lines: make([][]byte, 0, 64)} }

func (r *logRing) Write(p []byte) (int, error) {
	line := bytes.Clone(p[:min(len(p), maxRecentLineBytes)])
	if len(p) > maxRecentLineBytes {
		line = append(line[:maxRecentLineBytes-1], '\n')
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lines) < maxRecentLines {
		r.lines = append(r.lines, line)
	} else {
		r.lines[r.next] = line
		r.next = (r.next + 1) % maxRecentLines
	}
	return len(p), nil
}

// text is the kept lines, oldest first.
func (r *logRing) text() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b bytes.Buffer
	for _, l := range append(slices.Clone(r.lines[r.next:]), r.lines[:r.next]...) {
		b.Write(l)
	}
	return b.Bytes()
}

// debugConfig is the configuration a bundle shows: what shapes the
// node's behaviour, without a secret (the peer token, principals' token
// and certificate hashes, TLS keys), which it says only are set.
type debugConfig struct {
	ID, DataDir, RaftAddr, RaftAdvertise, HTTPAddr, HTTPAdvertise, MetricsAddr string
	Bootstrap                                                                  bool
	Join                                                                       []string
	Domains                                                                    []string
	AuthMode                                                                   string
	TLS, PeerTokenSet                                                          bool
	ApplyTimeout, TickInterval, HeartbeatTimeout, ElectionTimeout              string
	LeaderLeaseTimeout, SnapshotInterval                                       string
	SnapshotThreshold, TrailingLogs, MaxTrailingLogs                           uint64
	LogStore                                                                   string
	WALSegmentBytes                                                            int
	NoSyncUnsafe                                                               bool
	MaxConcurrentRequests                                                      int
}

func (hs *httpAPI) debugConfig() debugConfig {
	c := hs.cfg
	d := debugConfig{ID: c.ID, DataDir: c.DataDir, RaftAddr: c.RaftAddr, RaftAdvertise: c.RaftAdvertise, HTTPAddr: c.HTTPAddr,
		HTTPAdvertise: c.HTTPAdvertise, MetricsAddr: c.MetricsAddr, Bootstrap: c.Bootstrap, Join: c.Join, AuthMode: hs.authMode(),
		TLS: c.TLS != nil, PeerTokenSet: c.PeerToken != "",
		ApplyTimeout: c.ApplyTimeout.String(), TickInterval: c.TickInterval.String(), HeartbeatTimeout: c.HeartbeatTimeout.String(),
		ElectionTimeout: c.ElectionTimeout.String(), LeaderLeaseTimeout: c.LeaderLeaseTimeout.String(), SnapshotInterval: c.SnapshotInterval.String(),
		SnapshotThreshold: c.SnapshotThreshold, TrailingLogs: c.TrailingLogs, MaxTrailingLogs: c.MaxTrailingLogs,
		LogStore: c.LogStore, WALSegmentBytes: c.WALSegmentBytes, NoSyncUnsafe: c.NoSyncUnsafe, MaxConcurrentRequests: c.MaxConcurrentRequests}
	for _, dom := range c.Domains {
		d.Domains = append(d.Domains, dom.Name)
	}
	return d
}

// handleDebugBundle answers this node's debug bundle, a tar.gz.
func (hs *httpAPI) handleDebugBundle(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	if err := hs.writeBundle(&buf); err != nil {
		domain.WriteError(w, errs.Errorf(errs.CodeInternal, "debug bundle: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", "arbiter-debug-"+hs.cfg.ID+".tar.gz"))
	_, _ = w.Write(buf.Bytes())
}

func (hs *httpAPI) writeBundle(w *bytes.Buffer) error {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	now := time.Now()
	add := func(name string, body []byte) error {
		if len(body) > maxBundlePart {
			body = append(body[:maxBundlePart:maxBundlePart], "\n[cut at the bundle's bound]\n"...)
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(body)), ModTime: now}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	status, err := json.MarshalIndent(hs.node.Status(), "", "  ")
	if err != nil {
		return err
	}
	config, err := json.MarshalIndent(hs.debugConfig(), "", "  ")
	if err != nil {
		return err
	}
	var metrics bytes.Buffer
	if families, err := hs.metrics.registry.Gather(); err == nil {
		enc := expfmt.NewEncoder(&metrics, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range families {
			if err := enc.Encode(mf); err != nil {
				return err
			}
		}
	}
	var goroutines, heap bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&goroutines, 1); err != nil {
		return err
	}
	runtime.GC() // the heap profile shows live objects as of the last collection
	if err := pprof.Lookup("heap").WriteTo(&heap, 0); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		body []byte
	}{
		{"status.json", status}, {"config.json", config}, {"metrics.txt", metrics.Bytes()},
		{"goroutines.txt", goroutines.Bytes()}, {"heap.pprof", heap.Bytes()}, {"log.jsonl", hs.recent.text()},
	} {
		if err := add(f.name, f.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
