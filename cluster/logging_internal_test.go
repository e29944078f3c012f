package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster/internal/hclogslog"
	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// lockedBuffer is a log sink safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func limitedLogger(w *lockedBuffer, l *logLimiter) *slog.Logger {
	return slog.New(limitHandler{inner: slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}), l: l})
}

// A repeated warning or error is logged once per interval per kind (level,
// message, peer); the next one logged says how many were held back; other
// peers, other messages and lines below warning are not held back.
func TestLogLimiterBoundsRepeats(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLogLimiter(10 * time.Second)
	l.now = func() time.Time { return now }
	var out lockedBuffer
	log := limitedLogger(&out, l).With("component", "raft")
	for i := range 100 {
		log.Error("failed to heartbeat to", "peer", "n2", "error", fmt.Sprintf("dial %d", i))
		log.Error("failed to heartbeat to", "peer", "n3", "error", "x")
		log.Warn("failed to contact", "server-id", "n2")
		log.Info("routine", "i", i)
		now = now.Add(50 * time.Millisecond) // 5 s in all
	}
	text := out.String()
	count := func(s string) int { return strings.Count(text, s) }
	if n := count(`msg="failed to heartbeat to" component=raft peer=n2`); n != 1 {
		t.Errorf("%d heartbeat errors for n2 in 5 s, want 1:\n%s", n, text)
	}
	if n := count(`peer=n3`); n != 1 {
		t.Errorf("%d heartbeat errors for n3, want 1", n)
	}
	if n := count(`msg="failed to contact"`); n != 1 {
		t.Errorf("%d warnings, want 1", n)
	}
	if n := count(`msg=routine`); n != 100 {
		t.Errorf("%d info lines, want all 100", n)
	}
	if got := l.Suppressed(); got != 3*99 {
		t.Errorf("suppressed %d, want %d", got, 3*99)
	}
	// After the interval, the next line is logged with the count.
	now = now.Add(10 * time.Second)
	log.Error("failed to heartbeat to", "peer", "n2", "error", "last")
	if !strings.Contains(out.String(), `peer=n2 error=last suppressed=99`) {
		t.Errorf("the line after the interval does not say what was held back:\n%s", out.String())
	}
	log.Error("failed to heartbeat to", "peer", "n2", "error", "again")
	if strings.Contains(out.String(), "error=again") {
		t.Error("a new interval began without holding back repeats")
	}

	// The kinds it remembers are bounded.
	for i := range 3 * maxLogKinds {
		log.Error("e", "peer", i)
	}
	if len(l.kinds) > maxLogKinds {
		t.Errorf("%d kinds remembered, more than %d", len(l.kinds), maxLogKinds)
	}
}

// hclog's own value types are rendered as hclog renders them, not as Go
// values: raft's `servers` line was servers="[%+v [...]]".
func TestHclogValuesAreFormatted(t *testing.T) {
	var out lockedBuffer
	h := hclogslog.New(slog.New(slog.NewTextHandler(&out, nil)), "raft")
	servers := []raft.Server{{Suffrage: raft.Voter, ID: "n1", Address: "127.0.0.1:7001"}}
	h.Info("initial configuration", "index", 1, "servers", hclog.Fmt("%+v", servers), "percent", hclog.Fmt("%0.2f%%", 12.5))
	h.With("mask", hclog.Hex(255), "mode", hclog.Octal(8), "bits", hclog.Binary(5), "q", hclog.Quote("a\"b")).Warn("w")
	text := out.String()
	for _, want := range []string{
		`servers="[{Suffrage:Voter ID:n1 Address:127.0.0.1:7001}]"`, `percent=12.50%`,
		`mask=0xff`, `mode=010`, `bits=0b101`, `q="\"a\\\"b\""`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("log lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, "%+v") || strings.Contains(text, "%0.2f") {
		t.Errorf("a format leaked into the log:\n%s", text)
	}
}

// --log-format json writes one JSON object per line; text is slog's
// key=value; anything else is refused.
func TestNewLogger(t *testing.T) {
	var out lockedBuffer
	l, err := NewLogger(&out, "json", slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	hclogslog.New(l, "raft").Info("initial configuration", "servers", hclog.Fmt("%+v", []raft.Server{{ID: "n1"}}))
	l.Debug("hidden")
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out.String())), &line); err != nil {
		t.Fatalf("not one JSON line: %q: %v", out.String(), err)
	}
	if line["level"] != "INFO" || line["msg"] != "initial configuration" || line["component"] != "raft" || !strings.HasPrefix(fmt.Sprint(line["servers"]), "[{Suffrage:") {
		t.Errorf("json line %v", line)
	}
	if _, err := NewLogger(&out, "text", slog.LevelInfo); err != nil {
		t.Error(err)
	}
	if _, err := NewLogger(&out, "xml", slog.LevelInfo); err == nil || !strings.Contains(err.Error(), "text or json") {
		t.Errorf("xml: %v", err)
	}
}

// raft's values reach a JSON log as text and its "node" key does not
// collide with the node's own (issue 37: "node" twice, objects as {}).
func TestHclogJSONValues(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, nil)).With("node", "n1")
	h := hclogslog.New(l, "raft")
	h.Info("entering follower state", "node", raft.Server{ID: "n2", Address: "127.0.0.1:1"}, "leader", raft.ServerAddress("127.0.0.1:2"), "err", errors.New("boom"))
	line := buf.String()
	if strings.Contains(line, "{}") || strings.Count(line, `"node":`) != 1 {
		t.Errorf("JSON line %s: want no {} and one node key", line)
	}
	for _, want := range []string{`"node":"n1"`, `"raft_node":"{`, `"leader":"127.0.0.1:2"`, `"err":"boom"`} {
		if !strings.Contains(line, want) {
			t.Errorf("JSON line %s lacks %s", line, want)
		}
	}
}
