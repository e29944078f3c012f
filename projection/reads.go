package projection

import (
	"encoding/json"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// targetQuery is the payload of QueryTarget and QueryCurrent.
type targetQuery struct {
	TargetID string `msgpack:"target_id"`
}

// readable is the target when the reader may see it; otherwise the
// answer is the one for a target that does not exist.
func readable(rt *fsm.ReadTx, payload []byte) (*targetRow, error) {
	var q targetQuery
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	if err := CheckTargetID(q.TargetID); err != nil {
		return nil, err
	}
	t, err := getTarget(rt.Txn, q.TargetID)
	if err != nil {
		return nil, err
	}
	if t == nil || !t.mayRead(rt.Principal) {
		return nil, missing(q.TargetID)
	}
	return t, nil
}

// runTarget is a target's channels, lease (without its token hash) and
// last publication.
func runTarget(rt *fsm.ReadTx, payload []byte) (any, error) {
	t, err := readable(rt, payload)
	if err != nil {
		return nil, err
	}
	v := &TargetView{TargetID: t.TargetID, AgentID: t.AgentID, Attested: t.Attested, CreatedAtMs: t.CreatedAtMs,
		Channels: []ChannelView{}, NowMs: rt.Now}
	for _, b := range t.Channels {
		row, err := getChannel(rt.Txn, t.TargetID, b.Channel)
		if err != nil {
			return nil, err
		}
		cv := ChannelView{Channel: b.Channel, Producer: b.Producer, Status: StatusEmpty}
		if row != nil {
			cv.Status, cv.SourceWatermark, cv.CapturedAtMs = statusOf(row, rt.Now), row.SourceWatermark, row.CapturedAtMs
			cv.ExpiresAtMs, cv.UpdatedAtMs, cv.Conflicts = row.ExpiresAtMs, row.UpdatedAtMs, row.Conflicts
		}
		v.Channels = append(v.Channels, cv)
	}
	l, err := getLease(rt.Txn, t.TargetID)
	if err != nil {
		return nil, err
	}
	if l != nil {
		v.Lease = &LeaseView{FencingEpoch: l.FencingEpoch, State: l.stateAt(rt.Now), HolderInstanceDigest: l.HolderInstanceDigest,
			AcquiredAtMs: l.AcquiredAtMs, ExpiresAtMs: l.ExpiresAtMs, EndedAtMs: l.EndedAtMs}
	}
	p, err := getPublication(rt.Txn, t.TargetID)
	if err != nil {
		return nil, err
	}
	if p != nil {
		v.LastPublication = p.result()
	}
	return v, nil
}

// current is QueryCurrent's result: the bytes of the last publication.
type current struct {
	Bytes []byte `msgpack:"bytes"`
}

// runCurrent is the target's last publication as stored: the bytes every
// node with a runtime root writes to current.json.
func runCurrent(rt *fsm.ReadTx, payload []byte) (any, error) {
	t, err := readable(rt, payload)
	if err != nil {
		return nil, err
	}
	p, err := getPublication(rt.Txn, t.TargetID)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errs.Errorf(errs.CodeNotFound, "target %s has no publication yet", t.TargetID)
	}
	return &current{Bytes: p.Bytes}, nil
}

// Publication is a publication as readers of current.json see it.
type Publication struct {
	TargetID       string             `json:"target_id"`
	PublicationSeq uint64             `json:"publication_seq"`
	FencingEpoch   uint64             `json:"fencing_epoch"`
	PublishedAtMs  int64              `json:"published_at_ms"`
	Channels       []PublishedChannel `json:"channels"`
}

// PublishedChannel is one channel's entry in a publication.
type PublishedChannel struct {
	Channel         string          `json:"channel"`
	Producer        string          `json:"producer"`
	Status          string          `json:"status"`
	SourceWatermark uint64          `json:"source_watermark,omitempty"`
	CapturedAtMs    int64           `json:"captured_at_ms,omitempty"`
	ExpiresAtMs     int64           `json:"expires_at_ms,omitempty"`
	Provenance      json.RawMessage `json:"provenance,omitempty"`
	Citations       json.RawMessage `json:"citations,omitempty"`
	Envelope        json.RawMessage `json:"envelope,omitempty"`
}

// ParsePublication decodes current.json (or GET .../current), strictly:
// the fields above and nothing else.
func ParsePublication(b []byte) (*Publication, error) {
	var p Publication
	if err := decodeStrict(b, &p); err != nil {
		return nil, errs.Errorf(errs.CodeInvalid, "publication: %v", err)
	}
	return &p, nil
}
