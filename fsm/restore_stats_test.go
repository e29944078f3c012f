package fsm_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// TestRestoreLogsWhatItCost: a restore logs one line with the stream's
// rows and bytes and where its time went (the breakdown a slow restart
// is read from).
func TestRestoreLogsWhatItCost(t *testing.T) {
	src, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}})
	if err != nil {
		t.Fatal(err)
	}
	var batch []*raft.Log
	for i := range 600 { // rows in more than one batch
		batch = append(batch, entry(t, uint64(i+1), nodes.CmdCreate, nodes.CreateCommand{NodeID: fmt.Sprintf("n%03d", i)}))
	}
	src.ApplyBatch(batch)
	stream := fsmtest.Snapshot(t, src)

	var logged bytes.Buffer
	dst, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := restore(dst, stream); err != nil {
		t.Fatal(err)
	}
	line := logged.String()
	for _, want := range []string{`msg="restored a snapshot"`, "index=600 ", fmt.Sprintf("bytes=%d ", len(stream)),
		"took=", "insert_busy=", "insert_waited=", "gc_cycles=", "gc_cpu_s="} {
		if !strings.Contains(line, want) {
			t.Errorf("restore log %q lacks %q", line, want)
		}
	}
	// Rows: the 600 nodes and what the core keeps beside them (meta, feed).
	var rows int
	if m := regexp.MustCompile(`rows=(\d+) `).FindStringSubmatch(line); m == nil {
		t.Errorf("restore log %q: no rows", line)
	} else if rows, _ = strconv.Atoi(m[1]); rows < 600 {
		t.Errorf("restore log %q: %d rows, want 600 nodes at least", line, rows)
	}
}
