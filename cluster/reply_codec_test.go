package cluster

import (
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
	"pgregory.net/rapid"
)

// wireReply's direct encoder writes what reflection and the canonical
// pass write.
func TestReplyAppendsWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var r wireReply
		if rapid.Bool().Draw(t, "has response") {
			r.Response = &fsm.Response{Index: rapid.Uint64().Draw(t, "index"), Time: rapid.Int64().Draw(t, "time"),
				Result: rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "result"), Replayed: rapid.Bool().Draw(t, "replayed")}
			if rapid.Bool().Draw(t, "response error") {
				r.Response.Err = errs.New(errs.CodeInvalid, "bad")
			}
		}
		r.Result = rapid.OneOf(rapid.Just([]byte(nil)), rapid.SliceOfN(rapid.Byte(), 0, 70000)).Draw(t, "out")
		if rapid.Bool().Draw(t, "has error") {
			r.Err = &errs.Error{Code: errs.CodeUnavailable, Message: rapid.String().Draw(t, "message"), OutcomeUnknown: true,
				Detail: map[string]any{"leader": "n2", "after": int64(5)}}
		}
		if err := arblog.CheckAppender(r); err != nil {
			t.Fatal(err)
		}
	})
}

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
