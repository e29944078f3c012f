package fsm_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
	"github.com/hashicorp/raft"
)

func createCommand(b *testing.B, id string) []byte {
	payload, err := log.Marshal(fsm.CreateNodeCommand{NodeID: id, Labels: []string{"bench"},
		Properties: map[string]json.RawMessage{"owner": json.RawMessage(`"client-7"`), "fence": json.RawMessage("1")}})
	if err != nil {
		b.Fatal(err)
	}
	data, err := log.Encode(log.Command{Type: fsm.CmdNodeCreate, Version: 1, Stamp: 1, Payload: payload})
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkApplyCreate measures one create-if-absent through FSM.Apply:
// decode, dispatch, memdb insert of node, label and change event, commit.
func BenchmarkApplyCreate(b *testing.B) {
	f, err := fsm.New(fsm.Config{})
	if err != nil {
		b.Fatal(err)
	}
	entries := make([]*raft.Log, b.N)
	for i := range entries {
		entries[i] = &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: createCommand(b, fmt.Sprintf("node-%09d", i))}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range entries {
		res := f.Apply(entries[i]).(*fsm.Response)
		if res.Err != nil {
			b.Fatal(res.Err)
		}
	}
}

// BenchmarkApplyBatch64 is the same through ApplyBatch in raft's batches.
func BenchmarkApplyBatch64(b *testing.B) {
	f, err := fsm.New(fsm.Config{})
	if err != nil {
		b.Fatal(err)
	}
	entries := make([]*raft.Log, b.N)
	for i := range entries {
		entries[i] = &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: createCommand(b, fmt.Sprintf("node-%09d", i))}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < len(entries); i += 64 {
		f.ApplyBatch(entries[i:min(i+64, len(entries))])
	}
}

func BenchmarkEncodeCommand(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		createCommand(b, "node-000000001")
	}
}

func BenchmarkDecodeCommand(b *testing.B) {
	data := createCommand(b, "node-000000001")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := log.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
