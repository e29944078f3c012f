package hclogslog

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// levelOf logs one line through New and returns the level slog wrote.
func levelOf(t *testing.T, log func(l interface{ Error(string, ...any) })) string {
	t.Helper()
	var b bytes.Buffer
	log(New(slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})), "raft"))
	_, rest, ok := strings.Cut(b.String(), "level=")
	if !ok {
		t.Fatalf("no line: %q", b.String())
	}
	level, _, _ := strings.Cut(rest, " ")
	return level
}

// What raft logs at ERROR when a node stops gracefully, or a peer does,
// is not an error of the node that logs it (issue 37); the same messages
// with a cause that is still logged at ERROR.
func TestShutdownAndPeerLossAreNotErrors(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		args []any
		want string
	}{
		// This node's own transport closing under an RPC in flight.
		{"failed to decode incoming command", []any{"error", raft.ErrTransportShutdown}, "DEBUG"},
		// Garbage on the raft port is still an error.
		{"failed to decode incoming command", []any{"error", errors.New("msgpack decode error")}, "ERROR"},
		// A peer that stopped, restarts or cannot be reached.
		{"failed to appendEntries to", []any{"peer", "n1", "error", io.EOF}, "WARN"},
		{"failed to heartbeat to", []any{"peer", "n1", "backoff time", "10ms", "error", errors.New("connection refused")}, "WARN"},
		{"failed to pipeline appendEntries", []any{"peer", "n1", "error", io.EOF}, "WARN"},
		{"failed to make requestVote RPC", []any{"target", "n1", "error", io.EOF, "term", 3}, "WARN"},
		// Other errors stay errors.
		{"failed to get log", []any{"index", 7, "error", errors.New("log not found")}, "ERROR"},
	} {
		got := levelOf(t, func(l interface{ Error(string, ...any) }) { l.Error(tc.msg, tc.args...) })
		if got != tc.want {
			t.Errorf("%q %v logged at %s, want %s", tc.msg, tc.args, got, tc.want)
		}
	}
}
