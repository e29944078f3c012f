// Package hclogslog lets hashicorp/raft, which logs through go-hclog,
// log through a node's slog.Logger.
package hclogslog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"strconv"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// slogHclog lets hashicorp/raft log through the node's slog.Logger.
type slogHclog struct {
	l       *slog.Logger
	name    string
	implied []any
}

var _ hclog.Logger = (*slogHclog)(nil)

func New(l *slog.Logger, name string) hclog.Logger {
	return &slogHclog{l: l.With("component", name), name: name}
}

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (h *slogHclog) Log(level hclog.Level, msg string, args ...any) {
	lv := slogLevel(level)
	if lv >= slog.LevelWarn {
		if quieter, ok := routine[msg]; ok {
			lv = min(lv, quieter(args))
		}
	}
	h.l.Log(context.Background(), lv, msg, hclogValues(args)...)
}

// routine lowers what hashicorp/raft logs at WARN or ERROR during healthy
// operation, so that a WARN from a node means something to look at
// (issue 43: a healthy join logged four). Each entry says at which level
// the message is logged, from its arguments.
var routine = map[string]func(args []any) slog.Level{
	// Log repair: a follower (a joiner, a restarted node) lacks the
	// entry before what the leader sent, and the leader backs up. This is
	// how a follower catches up, not a fault.
	"failed to get previous log":                 func([]any) slog.Level { return slog.LevelInfo },
	"appendEntries rejected, sending older logs": func([]any) slog.Level { return slog.LevelInfo },
	// A leader deposed by a higher term: what a handover, or a leader
	// election after a partition heals, looks like from the old leader.
	// The state change itself is logged at INFO.
	"peer has newer term, stopping replication": func([]any) slog.Level { return slog.LevelInfo },
	// A vote refused to a candidate whose log is behind this node's: the
	// election rule keeping a stale node from leading, which a handover
	// or a restarted member's first election meets (TestHealthyMembership
	// IsQuiet failed on it about once in eight runs). The election's
	// outcome is logged at INFO; a cluster that cannot elect shows as no
	// leader, which readiness and the metrics report.
	"rejecting vote request since our last term is greater":  func([]any) slog.Level { return slog.LevelInfo },
	"rejecting vote request since our last index is greater": func([]any) slog.Level { return slog.LevelInfo },
	// RPCs to a peer that failed: the peer stopped (a graceful shutdown
	// closes its connections under the RPC in flight: EOF), restarts,
	// crashed or is cut off. Something to look at, but not a fault of
	// this node, and what every rolling restart does (issue 37: a
	// graceful stop logged ERROR on the leader). Raft retries with
	// backoff; arbiter_raft_peer_last_contact_seconds shows how long.
	"failed to appendEntries to":       func([]any) slog.Level { return slog.LevelWarn },
	"failed to heartbeat to":           func([]any) slog.Level { return slog.LevelWarn },
	"failed to pipeline appendEntries": func([]any) slog.Level { return slog.LevelWarn },
	// The same for a candidate's (pre)vote request to a stopped voter.
	"failed to make requestVote RPC": func([]any) slog.Level { return slog.LevelWarn },
	// This node's own transport closing (Shutdown) under an RPC a peer
	// had in flight; any other failure to read an RPC stays an error.
	"failed to decode incoming command": func(args []any) slog.Level {
		if argValue(args, "error") == raft.ErrTransportShutdown.Error() {
			return slog.LevelDebug
		}
		return slog.LevelError
	},
	// A node's first election after a start, with no leader known
	// before: a cluster forming, not a leader lost.
	"heartbeat timeout reached, starting election": func(args []any) slog.Level {
		if argValue(args, "last-leader-id") == "" {
			return slog.LevelInfo
		}
		return slog.LevelWarn
	},
}

// argValue is the value of key in hclog's alternating key and value
// arguments, as a string ("" if absent).
func argValue(args []any, key string) string {
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == key {
			return fmt.Sprint(args[i+1])
		}
	}
	return ""
}

// hclogValues turns raft's alternating keys and values into slog's. A
// value hclog formats itself is rendered as hclog renders it:
// hclog.Fmt("%+v", servers) is a Format, a slice of the format and its
// arguments, that slog wrote as servers="[%+v [...]]"; Hex, Octal,
// Binary and Quote likewise. Any other value that is not a plain scalar
// (raft's *Raft, a raft.Server, an error) is rendered with fmt, so that a
// JSON log shows "Node at ... [Leader]" rather than {}. raft's own
// "node" key becomes "raft_node": the node's logger already carries
// "node" (its id), and a JSON line must not hold one key twice.
func hclogValues(args []any) []any {
	var out []any // a copy only when something changes
	set := func(i int, v any) {
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = v
	}
	for i, a := range args {
		if i%2 == 0 {
			if a == "node" {
				set(i, "raft_node")
			}
			continue
		}
		switch x := a.(type) {
		case string, bool, int, int32, int64, uint, uint32, uint64, float64, time.Duration, time.Time, nil:
		case hclog.Format:
			if len(x) == 0 {
				set(i, "")
			} else if format, ok := x[0].(string); ok {
				set(i, fmt.Sprintf(format, x[1:]...))
			} else {
				set(i, fmt.Sprint(x...))
			}
		case hclog.Hex:
			set(i, "0x"+strconv.FormatUint(uint64(x), 16))
		case hclog.Octal:
			set(i, "0"+strconv.FormatUint(uint64(x), 8))
		case hclog.Binary:
			set(i, "0b"+strconv.FormatUint(uint64(x), 2))
		case hclog.Quote:
			set(i, strconv.Quote(string(x)))
		default:
			set(i, fmt.Sprint(x))
		}
	}
	if out == nil {
		return args
	}
	return out
}

func (h *slogHclog) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *slogHclog) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *slogHclog) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *slogHclog) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *slogHclog) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *slogHclog) enabled(l slog.Level) bool { return h.l.Enabled(context.Background(), l) }
func (h *slogHclog) IsTrace() bool             { return h.enabled(slog.LevelDebug) }
func (h *slogHclog) IsDebug() bool             { return h.enabled(slog.LevelDebug) }
func (h *slogHclog) IsInfo() bool              { return h.enabled(slog.LevelInfo) }
func (h *slogHclog) IsWarn() bool              { return h.enabled(slog.LevelWarn) }
func (h *slogHclog) IsError() bool             { return h.enabled(slog.LevelError) }
func (h *slogHclog) ImpliedArgs() []any        { return h.implied }
func (h *slogHclog) Name() string              { return h.name }

func (h *slogHclog) With(args ...any) hclog.Logger {
	return &slogHclog{l: h.l.With(hclogValues(args)...), name: h.name, implied: append(append([]any{}, h.implied...), args...)}
}

func (h *slogHclog) Named(name string) hclog.Logger {
	if h.name != "" {
		name = h.name + "." + name
	}
	return h.ResetNamed(name)
}

func (h *slogHclog) ResetNamed(name string) hclog.Logger {
	return &slogHclog{l: h.l.With("component", name), name: name, implied: h.implied}
}

// SetLevel is ignored: the slog handler decides what is logged.
func (h *slogHclog) SetLevel(hclog.Level) {}

func (h *slogHclog) GetLevel() hclog.Level {
	switch {
	case h.IsDebug():
		return hclog.Debug
	case h.IsInfo():
		return hclog.Info
	case h.IsWarn():
		return hclog.Warn
	default:
		return hclog.Error
	}
}

func (h *slogHclog) StandardLogger(*hclog.StandardLoggerOptions) *stdlog.Logger {
	return stdlog.New(h.StandardWriter(nil), "", 0)
}

func (h *slogHclog) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return Writer{L: h.l}
}

// Writer turns lines written by stdlib-style loggers into slog records
// of L.
type Writer struct{ L *slog.Logger }

// Write logs p, one record, at level Info.
func (w Writer) Write(p []byte) (int, error) {
	w.L.Info(string(bytes.TrimSpace(p)))
	return len(p), nil
}
