package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// NewLogger is a logger writing to w in format "text" (slog's key=value
// lines) or "json" (one JSON object per line), at level and above: what
// `arbiter serve --log-format` and --log-level build.
func NewLogger(w io.Writer, format string, level slog.Leveler) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format must be text or json, not %q", format)
}

// A node bounds its repeated warnings and errors. A follower that is away
// makes the leader's raft log a failed heartbeat and a failed replication
// every few milliseconds (a follower away for 40 s gave 132 ERROR lines):
// the first line of a kind is logged, the same line again within
// logRepeatInterval is not, and the first one after it says how many were
// suppressed (suppressed=N). A kind is the level, the message and the
// peer the line is about (the attributes peerAttrs name), so one failing
// peer never hides another. Lines below warning are never held back. The
// suppressed total is arbiter_log_lines_suppressed_total.
const logRepeatInterval = 10 * time.Second

// peerAttrs are the attributes raft and the node use to name the other
// party of a line.
var peerAttrs = map[string]bool{"peer": true, "server-id": true, "candidate": true, "from": true, "target": true, "member": true, "api": true}

// maxLogKinds bounds the kinds a limiter remembers.
const maxLogKinds = 1024

// logLimiter decides, for each kind of line, whether to log it.
type logLimiter struct {
	every time.Duration
	now   func() time.Time

	mu    sync.Mutex
	kinds map[string]*logKind

	suppressed atomic.Uint64 // every line held back, for the metric
}

type logKind struct {
	logged     time.Time // when a line of the kind was last logged
	suppressed uint64    // lines held back since
}

func newLogLimiter(every time.Duration) *logLimiter {
	return &logLimiter{every: every, now: time.Now, kinds: map[string]*logKind{}}
}

// allow reports whether a line of kind is logged now and, if so, how many
// of the kind were held back since the last one logged.
func (l *logLimiter) allow(kind string) (ok bool, held uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	k := l.kinds[kind]
	if k == nil {
		if len(l.kinds) >= maxLogKinds {
			l.forget(now)
		}
		l.kinds[kind] = &logKind{logged: now}
		return true, 0
	}
	if now.Sub(k.logged) < l.every {
		k.suppressed++
		l.suppressed.Add(1)
		return false, 0
	}
	held, k.suppressed, k.logged = k.suppressed, 0, now
	return true, held
}

// forget drops the kinds whose interval has passed with nothing held
// back, or every kind when that frees nothing: the map stays bounded.
func (l *logLimiter) forget(now time.Time) {
	for kind, k := range l.kinds {
		if now.Sub(k.logged) >= l.every && k.suppressed == 0 {
			delete(l.kinds, kind)
		}
	}
	if len(l.kinds) >= maxLogKinds {
		clear(l.kinds)
	}
}

// Suppressed is how many lines the limiter held back.
func (l *logLimiter) Suppressed() uint64 { return l.suppressed.Load() }

// limitHandler applies a logLimiter to the warnings and errors of the
// handler it wraps.
type limitHandler struct {
	inner slog.Handler
	l     *logLimiter
}

func (h limitHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h limitHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.inner.Handle(ctx, r)
	}
	ok, held := h.l.allow(lineKind(r))
	if !ok {
		return nil
	}
	if held > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Uint64("suppressed", held))
	}
	return h.inner.Handle(ctx, r)
}

func (h limitHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return limitHandler{inner: h.inner.WithAttrs(attrs), l: h.l}
}

func (h limitHandler) WithGroup(name string) slog.Handler {
	return limitHandler{inner: h.inner.WithGroup(name), l: h.l}
}

// lineKind is the level, the message and the peer a line is about.
func lineKind(r slog.Record) string {
	var b strings.Builder
	b.WriteString(r.Level.String())
	b.WriteByte(0)
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		if peerAttrs[a.Key] {
			b.WriteByte(0)
			b.WriteString(a.Key)
			b.WriteByte('=')
			b.WriteString(a.Value.String())
		}
		return true
	})
	return b.String()
}
