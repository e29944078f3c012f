package projection

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/canon"
	"github.com/arbiterhq/arbiter/internal/strictjson"
)

// The envelope frame: the fields every channel's envelope carries, and
// nothing else at the top level. The content (body, what provenance and
// citations say) is the producer's; only the frame is validated.
var envelopeFields = []string{"body", "citations", "expires_at_ms", "not_authority", "provenance", "schema", "watermark"}

// frame is what the writer reads from an envelope: the parts a
// publication repeats for every status, as canonical JSON.
type frame struct {
	ExpiresAtMs int64
	Provenance  json.RawMessage
	Citations   json.RawMessage
}

// canonicalEnvelope checks raw's frame against the channel and the
// submission's watermark and returns its canonical form (keys sorted,
// compact, numbers normalized), in which envelopes are stored and
// compared.
func canonicalEnvelope(raw []byte, channel string, watermark uint64) ([]byte, frame, error) {
	if len(raw) > MaxEnvelopeBytes {
		return nil, frame{}, errs.Errorf(errs.CodeTooLarge, "envelope is %d bytes, more than %d", len(raw), MaxEnvelopeBytes)
	}
	c, err := canon.JSON(raw)
	if err != nil {
		return nil, frame{}, errs.Errorf(errs.CodeInvalid, "envelope: %v", err)
	}
	if len(c) > MaxEnvelopeBytes {
		return nil, frame{}, errs.Errorf(errs.CodeTooLarge, "envelope is %d bytes in canonical form, more than %d", len(c), MaxEnvelopeBytes)
	}
	f, err := checkFrame(c, channel, watermark)
	return c, f, err
}

// storedEnvelope checks an envelope as a command carries it: already
// canonical, with a valid frame (the handler trusts no proposer).
func storedEnvelope(c []byte, channel string, watermark uint64) (frame, error) {
	again, f, err := canonicalEnvelope(c, channel, watermark)
	if err != nil {
		return frame{}, err
	}
	if !bytes.Equal(again, c) {
		return frame{}, errs.New(errs.CodeInvalid, "envelope is not in canonical form")
	}
	return f, nil
}

func checkFrame(c []byte, channel string, watermark uint64) (frame, error) {
	bad := func(format string, args ...any) (frame, error) {
		return frame{}, errs.Errorf(errs.CodeInvalid, "envelope: "+format, args...)
	}
	var top map[string]json.RawMessage
	if len(c) == 0 || c[0] != '{' || json.Unmarshal(c, &top) != nil {
		return bad("must be a JSON object")
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != strings.Join(envelopeFields, ",") {
		return bad("must have exactly the fields %s (it has %s)", strings.Join(envelopeFields, ", "), strings.Join(keys, ", "))
	}
	if string(top["schema"]) != strconv.Quote(channel) {
		return bad("schema must be the channel, %q", channel)
	}
	if string(top["not_authority"]) != "true" {
		return bad("not_authority must be true")
	}
	if w, err := strconv.ParseUint(string(top["watermark"]), 10, 64); err != nil || w != watermark {
		return bad("watermark must be the submission's source_watermark, %d", watermark)
	}
	exp, err := strconv.ParseInt(string(top["expires_at_ms"]), 10, 64)
	if err != nil || exp < 1 || exp > MaxExpiresAtMs {
		return bad("expires_at_ms must be an integer between 1 and %d", int64(MaxExpiresAtMs))
	}
	if top["provenance"][0] != '{' {
		return bad("provenance must be an object")
	}
	if top["citations"][0] != '[' {
		return bad("citations must be an array")
	}
	if string(top["body"]) == "null" {
		return bad("body must not be null")
	}
	return frame{ExpiresAtMs: exp, Provenance: top["provenance"], Citations: top["citations"]}, nil
}

// decodeStrict is strictjson.Decode (one value, known fields only).
func decodeStrict(b []byte, v any) error { return strictjson.Decode(b, v) }
