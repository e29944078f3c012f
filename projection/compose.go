package projection

import (
	"bytes"
	"sort"
	"strconv"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/canon"
)

// compose builds current.json for target t: canonical JSON
//
//	{"channels":[...],"fencing_epoch":E,"publication_seq":S,"published_at_ms":T,"target_id":"pt_..."}
//
// with one entry per admitted channel, in channel-name order:
// {channel, producer, status} and, unless empty, source_watermark,
// captured_at_ms, expires_at_ms, provenance and citations, plus the
// envelope itself when fresh. It concatenates what producers sent; it
// never reads content to rank or choose.
func compose(s fsm.Store, t *targetRow, seq, epoch uint64, now int64) ([]byte, error) {
	var entries [][]byte
	for _, b := range t.Channels {
		row, err := getChannel(s, t.TargetID, b.Channel)
		if err != nil {
			return nil, err
		}
		e, err := entry(b, row, now)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return object(map[string][]byte{
		"target_id":       quote(t.TargetID),
		"publication_seq": uint64Lit(seq),
		"fencing_epoch":   uint64Lit(epoch),
		"published_at_ms": int64Lit(now),
		"channels":        array(entries),
	}), nil
}

func entry(b ChannelBinding, row *channelRow, now int64) ([]byte, error) {
	fields := map[string][]byte{"channel": quote(b.Channel), "producer": quote(b.Producer)}
	if row == nil {
		fields["status"] = quote(StatusEmpty)
		return object(fields), nil
	}
	f, err := checkFrame(row.Envelope, row.Channel, row.SourceWatermark)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "stored envelope of %s/%s: %v", row.TargetID, row.Channel, err)
	}
	status := statusOf(row, now)
	fields["status"] = quote(status)
	fields["source_watermark"] = uint64Lit(row.SourceWatermark)
	fields["captured_at_ms"] = int64Lit(row.CapturedAtMs)
	fields["expires_at_ms"] = int64Lit(row.ExpiresAtMs)
	fields["provenance"] = f.Provenance
	fields["citations"] = f.Citations
	if status == StatusFresh {
		fields["envelope"] = row.Envelope
	}
	return object(fields), nil
}

// statusOf is a stored channel's status at FSM time now: a source
// conflict outranks expiry, which outranks freshness.
func statusOf(row *channelRow, now int64) string {
	switch {
	case row.Degraded:
		return StatusDegraded
	case now >= row.ExpiresAtMs:
		return StatusExpired
	default:
		return StatusFresh
	}
}

// object writes a JSON object of canonical values with its keys sorted,
// which makes it canonical too.
func object(fields map[string][]byte) []byte {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(quote(k))
		buf.WriteByte(':')
		buf.Write(fields[k])
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

func array(items [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(items, []byte{','})...), ']')
}

// quote is a string as canonical JSON. The strings quoted here are ids,
// channel names and statuses: validated UTF-8 identifiers, which canon
// always encodes.
func quote(s string) []byte {
	b, _ := canon.Value(s)
	return b
}

func uint64Lit(v uint64) []byte { return []byte(strconv.FormatUint(v, 10)) }
func int64Lit(v int64) []byte   { return []byte(strconv.FormatInt(v, 10)) }
