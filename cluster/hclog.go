package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"strconv"

	hclog "github.com/hashicorp/go-hclog"
)

// slogHclog lets hashicorp/raft log through the node's slog.Logger.
type slogHclog struct {
	l       *slog.Logger
	name    string
	implied []any
}

var _ hclog.Logger = (*slogHclog)(nil)

func newHclog(l *slog.Logger, name string) hclog.Logger {
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
	h.l.Log(context.Background(), slogLevel(level), msg, hclogValues(args)...)
}

// hclogValues renders the values hclog formats itself, which slog would
// print as Go values: hclog.Fmt("%+v", servers) is a Format, a slice of
// the format and its arguments, that slog wrote as servers="[%+v [...]]".
// Hex, Octal, Binary and Quote are rendered as hclog renders them.
func hclogValues(args []any) []any {
	var out []any // a copy only when something changes
	for i, a := range args {
		var v any
		switch x := a.(type) {
		case hclog.Format:
			if len(x) == 0 {
				v = ""
			} else if format, ok := x[0].(string); ok {
				v = fmt.Sprintf(format, x[1:]...)
			} else {
				v = fmt.Sprint(x...)
			}
		case hclog.Hex:
			v = "0x" + strconv.FormatUint(uint64(x), 16)
		case hclog.Octal:
			v = "0" + strconv.FormatUint(uint64(x), 8)
		case hclog.Binary:
			v = "0b" + strconv.FormatUint(uint64(x), 2)
		case hclog.Quote:
			v = strconv.Quote(string(x))
		default:
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = v
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
	return slogWriter{h.l}
}

// slogWriter turns lines written by stdlib-style loggers into slog records.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Info(string(bytes.TrimSpace(p)))
	return len(p), nil
}
