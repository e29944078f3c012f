package fsm

import (
	"testing"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/log"
	"github.com/google/go-cmp/cmp"
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

// Whatever Event's direct decoder takes, the reflective one takes with an
// equal result; and it takes every event Marshal writes.
func FuzzDecodeEventAgrees(f *testing.F) {
	for _, e := range []Event{
		{Seq: 1, Index: 9, Time: 1700000000000, Kind: "node_create", Key: "n1"},
		{Seq: 1 << 40, Index: 300, Time: -5, Kind: "k", Key: "x", Tenant: "t", Payload: []byte(`{"a":1}`), Value: []byte(`"v"`), Overwritten: true},
	} {
		f.Add(log.MustMarshal(&e))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		shared := log.NewStrings() // a restore's: twice, to share the first's strings
		for range 2 {
			var fast, s Event
			if s.DecodeSharing(b, shared) != fast.DecodeDirect(b) {
				t.Fatalf("sharing and direct decoders disagree on taking %x", b)
			}
			if diff := cmp.Diff(fast, s); diff != "" {
				t.Fatalf("sharing and direct decoders disagree on %x (-direct +sharing):\n%s", b, diff)
			}
		}
		var fast Event
		if !fast.DecodeDirect(b) {
			if diff := cmp.Diff(Event{}, fast); diff != "" {
				t.Fatalf("declined %x but changed the event:\n%s", b, diff)
			}
			return
		}
		var slow Event
		if err := log.Unmarshal(b, &slow); err != nil {
			t.Fatalf("direct decoder took %x, the reflective one refuses it: %v", b, err)
		}
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Fatalf("decoders disagree on %x (-reflective +direct):\n%s", b, diff)
		}
	})
}

func TestDecodeEventTakesWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bin := rapid.OneOf(rapid.Just([]byte(nil)), rapid.SliceOfN(rapid.Byte(), 1, 300))
		e := Event{
			Seq: rapid.Uint64().Draw(t, "seq"), Index: rapid.Uint64().Draw(t, "index"),
			Time: rapid.Int64().Draw(t, "time"), Kind: rapid.String().Draw(t, "kind"),
			Key: rapid.StringN(0, 40, -1).Draw(t, "key"), Tenant: rapid.OneOf(rapid.Just(""), rapid.String()).Draw(t, "tenant"),
			Payload: bin.Draw(t, "payload"), Value: bin.Draw(t, "value"), Overwritten: rapid.Bool().Draw(t, "overwritten"),
		}
		b := log.MustMarshal(&e)
		var got Event
		if !got.DecodeDirect(b) {
			t.Fatalf("declined %x", b)
		}
		if diff := cmp.Diff(e, got); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}

// A ledger row's direct encoder writes what reflection and the canonical
// pass write.
func TestIdemRowAppendsWhatMarshalWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := &idemRow{
			ID: rapid.String().Draw(t, "id"), Principal: rapid.OneOf(rapid.Just(""), rapid.String()).Draw(t, "principal"),
			Scope: rapid.OneOf(rapid.Just(""), rapid.String()).Draw(t, "scope"), Key: rapid.String().Draw(t, "key"),
			Response: genResponse(t), CreatedAt: rapid.OneOf(rapid.Int64(), rapid.Int64Range(0, 1<<42)).Draw(t, "created"),
		}
		copy(r.Digest[:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "digest"))
		if err := log.CheckAppender(r); err != nil {
			t.Fatal(err)
		}
	})
}
