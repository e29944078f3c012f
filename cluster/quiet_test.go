package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbiterhq/arbiter/cluster"
	"github.com/arbiterhq/arbiter/internal/clustertest"
)

// loud records every line at WARN or above, from every node.
type loud struct {
	mu    sync.Mutex
	lines []string
}

func (l *loud) handler(node string) slog.Handler { return loudHandler{l: l, node: node} }

type loudHandler struct {
	l     *loud
	node  string
	attrs []slog.Attr
}

func (h loudHandler) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }
func (h loudHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %q", h.node, r.Level, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	h.l.mu.Lock()
	h.l.lines = append(h.l.lines, b.String())
	h.l.mu.Unlock()
	return nil
}
func (h loudHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.attrs = append(append([]slog.Attr{}, h.attrs...), as...)
	return h
}
func (h loudHandler) WithGroup(string) slog.Handler { return h }

// take returns the lines so far and forgets them, but for the warning
// of open development mode, which is about configuration (this test's
// nodes run without principals), not health.
func (l *loud) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if !strings.Contains(line, "open development mode") {
			out = append(out, line)
		}
	}
	l.lines = nil
	return out
}

// Quiet when healthy (issue 43): nodes joining over TCP as non-voters,
// their promotion, and a leadership handover log nothing at WARN or
// above. An operator who sees a WARN should have something to look at.
func TestHealthyMembershipIsQuiet(t *testing.T) {
	l := &loud{}
	c := clustertest.New(t, clustertest.Options{Nodes: 3, TCP: true, Configure: func(i int, cfg *cluster.Config) {
		cfg.Logger = slog.New(l.handler(fmt.Sprintf("n%d", i+1)))
	}})
	c.WaitLeader(10 * time.Second)
	c.WaitVoters(10 * time.Second)
	if lines := l.take(); len(lines) > 0 {
		t.Errorf("joins and promotions logged %d lines at WARN or above:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	c.TransferLeadership(20 * time.Second)
	c.WaitVoters(10 * time.Second)
	if lines := l.take(); len(lines) > 0 {
		t.Errorf("a leadership handover logged %d lines at WARN or above:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}
