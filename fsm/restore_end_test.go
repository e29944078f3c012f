package fsm_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/fsmtest"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// failingEnd reads a stream and then, in place of io.EOF, fails: a read
// error at the end, or a source that checks what it handed out there.
type failingEnd struct{ r io.Reader }

var errAtEnd = errors.New("checksum of the source")

func (f failingEnd) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		err = errAtEnd
	}
	return n, err
}

func (failingEnd) Close() error { return nil }

// TestRestoreRefusesASourceThatFailsAtItsEnd: the error a source gives
// after the last byte refuses the restore (it was ignored), which changes
// nothing.
func TestRestoreRefusesASourceThatFailsAtItsEnd(t *testing.T) {
	src := newFSM(t)
	src.ApplyBatch([]*raft.Log{entry(t, 1, nodes.CmdCreate, nodes.CreateCommand{NodeID: "n1"})})
	stream := fsmtest.Snapshot(t, src)
	dst := newFSM(t)
	before := fsmtest.Snapshot(t, dst)
	err := dst.Restore(failingEnd{bytes.NewReader(stream)})
	if !errors.Is(err, fsm.ErrSnapshot) {
		t.Fatalf("restore of a source that fails at its end: %v, want ErrSnapshot", err)
	}
	if after := fsmtest.Snapshot(t, dst); !bytes.Equal(after, before) {
		t.Fatal("the refused restore changed the state")
	}
	if err := dst.Restore(io.NopCloser(bytes.NewReader(stream))); err != nil {
		t.Fatalf("the same stream, ending in io.EOF: %v", err)
	}
	if after := fsmtest.Snapshot(t, dst); !bytes.Equal(after, stream) {
		t.Fatal("the restored state is not the stream's")
	}
}
