package cluster

import (
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
	"pgregory.net/rapid"
)

// The forwarded batch and its reply write what reflection and the
// canonical pass write.
func TestBatchesAppendWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var batch applyBatch
		var reply applyBatchReply
		if rapid.Bool().Draw(t, "non-nil") {
			batch.Commands = rapid.SliceOfN(rapid.SliceOfN(rapid.Byte(), 0, 40), 0, 20).Draw(t, "commands")
			for i, n := 0, rapid.IntRange(0, 20).Draw(t, "replies"); i < n; i++ {
				r := wireReply{Response: &fsm.Response{Index: rapid.Uint64().Draw(t, "index"), Result: []byte{0x80}}}
				if rapid.Bool().Draw(t, "error") {
					r = wireReply{Err: errs.New(errs.CodeForbidden, "internal")}
				}
				reply.Replies = append(reply.Replies, r)
			}
		}
		for _, v := range []arblog.Appender{batch, reply} {
			if err := arblog.CheckAppender(v); err != nil {
				t.Fatal(err)
			}
		}
	})
}
