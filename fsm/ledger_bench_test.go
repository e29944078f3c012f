package fsm_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
	"github.com/arbiterhq/arbiter/nodes"
	"github.com/hashicorp/raft"
)

// BenchmarkApplyBatch64Keyed is ApplyBatch64 with an idempotency key on
// every create, as the Go client sends one (client.NewKey's form): what a
// ledger row costs the FSM next to the create itself.
func BenchmarkApplyBatch64Keyed(b *testing.B) {
	for _, keyed := range []bool{false, true} {
		b.Run(fmt.Sprintf("keyed=%v", keyed), func(b *testing.B) {
			f, err := fsm.New(fsm.Config{Modules: []fsm.Module{nodes.Module()}})
			if err != nil {
				b.Fatal(err)
			}
			entries := make([]*raft.Log, b.N)
			for i := range entries {
				payload, err := log.Marshal(nodes.CreateCommand{NodeID: fmt.Sprintf("node-%09d", i), Labels: []string{"bench"},
					Properties: map[string]json.RawMessage{"owner": json.RawMessage(`7`)}})
				if err != nil {
					b.Fatal(err)
				}
				cmd := log.Command{Type: nodes.CmdCreate, Version: 1, Stamp: 1, Payload: payload}
				if keyed {
					cmd.IdemKey = fmt.Sprintf("go-%032x", i)
				}
				data, err := log.Encode(cmd)
				if err != nil {
					b.Fatal(err)
				}
				entries[i] = &raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < len(entries); i += 64 {
				f.ApplyBatch(entries[i:min(i+64, len(entries))])
			}
		})
	}
}
