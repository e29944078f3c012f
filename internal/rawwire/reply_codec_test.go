package rawwire

import (
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	arblog "github.com/arbiterhq/arbiter/log"
	"pgregory.net/rapid"
)

// Reply's direct encoder writes what reflection and the canonical
// pass write.
func TestReplyAppendsWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var r Reply
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
