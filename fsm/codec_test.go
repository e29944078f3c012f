package fsm

import (
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/log"
	"pgregory.net/rapid"
)

func genResponse(t *rapid.T) Response {
	r := Response{
		Index:    rapid.OneOf(rapid.Uint64(), rapid.Uint64Range(0, 70000)).Draw(t, "index"),
		Time:     rapid.OneOf(rapid.Int64(), rapid.Int64Range(-100, 1<<42)).Draw(t, "time"),
		Result:   rapid.OneOf(rapid.Just([]byte(nil)), rapid.Just([]byte{}), rapid.SliceOfN(rapid.Byte(), 1, 300)).Draw(t, "result"),
		Replayed: rapid.Bool().Draw(t, "replayed"),
	}
	if rapid.Bool().Draw(t, "has error") {
		r.Err = &errs.Error{Code: errs.CodeConflict, Message: rapid.String().Draw(t, "message"),
			Detail: map[string]any{"b": "x", "a": int64(3)}, OutcomeUnknown: rapid.Bool().Draw(t, "unknown")}
	}
	return r
}

// Response's direct encoder writes what reflection and the canonical pass
// write.
func TestResponseAppendsWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		if err := log.CheckAppender(genResponse(t)); err != nil {
			t.Fatal(err)
		}
	})
}

// Event's direct encoder writes what reflection and the canonical pass
// write.
func TestEventAppendsWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bin := rapid.OneOf(rapid.Just([]byte(nil)), rapid.Just([]byte{}), rapid.SliceOfN(rapid.Byte(), 1, 300))
		e := &Event{
			Seq: rapid.Uint64().Draw(t, "seq"), Index: rapid.Uint64Range(0, 1<<20).Draw(t, "index"),
			Time: rapid.Int64().Draw(t, "time"), Kind: rapid.String().Draw(t, "kind"),
			Key: rapid.StringN(0, 40, -1).Draw(t, "key"), Tenant: rapid.OneOf(rapid.Just(""), rapid.String()).Draw(t, "tenant"),
			Payload: bin.Draw(t, "payload"), Value: bin.Draw(t, "value"), Overwritten: rapid.Bool().Draw(t, "overwritten"),
		}
		if err := log.CheckAppender(e); err != nil {
			t.Fatal(err)
		}
	})
}
