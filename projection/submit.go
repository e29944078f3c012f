package projection

import (
	"bytes"
	"fmt"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// submitCmd is the payload of CmdSubmit; Envelope is canonical JSON.
type submitCmd struct {
	TargetID        string `msgpack:"target_id"`
	Channel         string `msgpack:"channel"`
	SourceWatermark uint64 `msgpack:"source_watermark"`
	Envelope        []byte `msgpack:"envelope"`
}

func (c *submitCmd) validate() error {
	if err := CheckTargetID(c.TargetID); err != nil {
		return err
	}
	if err := checkChannel(c.Channel); err != nil {
		return err
	}
	return checkWatermark(c.SourceWatermark)
}

// applySubmit stores a producer's envelope under the watermark rules: a
// higher watermark replaces the channel's envelope (and ends a
// degradation), a lower one is stale_watermark, the same one with the
// same envelope is a replay, and the same one with another envelope is a
// source conflict that degrades the channel (committed, answered with
// conflict).
func applySubmit(tx *fsm.Tx, _ *log.Command, c *submitCmd) (any, error) {
	t, err := getTarget(tx, c.TargetID)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, missing(c.TargetID)
	}
	producer := t.producerOf(c.Channel)
	if producer == "" {
		return nil, errs.Errorf(errs.CodeForbidden, "target %s does not admit channel %s", c.TargetID, c.Channel)
	}
	p := tx.Principal
	if !p.Trusted() && (p.ID != producer || !p.HasRole(identity.RoleMember)) {
		return nil, errs.Errorf(errs.CodeForbidden, "only the channel's producer may submit to %s of target %s", c.Channel, c.TargetID)
	}
	f, err := storedEnvelope(c.Envelope, c.Channel, c.SourceWatermark)
	if err != nil {
		return nil, err
	}
	res := &SubmitResult{TargetID: c.TargetID, Channel: c.Channel, SourceWatermark: c.SourceWatermark, Decision: errs.Granted}
	row, err := getChannel(tx, c.TargetID, c.Channel)
	if err != nil {
		return nil, err
	}
	switch {
	case row == nil || c.SourceWatermark > row.SourceWatermark:
		if f.ExpiresAtMs <= tx.Now {
			return nil, errs.Errorf(errs.CodeExpired, "envelope expired at %d; FSM time is %d", f.ExpiresAtMs, tx.Now)
		}
		n := &channelRow{TargetID: c.TargetID, Channel: c.Channel, SourceWatermark: c.SourceWatermark, Envelope: c.Envelope,
			CapturedAtMs: tx.Now, ExpiresAtMs: f.ExpiresAtMs, UpdatedAtMs: tx.Now}
		if err := tx.Insert(tableChannels, n); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "store channel: %v", err)
		}
		tx.Emit("projection_submit", c.TargetID+"/"+c.Channel, "")
		res.Status = SubmitAccepted
		return res, nil
	case c.SourceWatermark < row.SourceWatermark:
		e := errs.Errorf(CodeStaleWatermark, "channel %s of target %s is at watermark %d; %d is stale", c.Channel, c.TargetID, row.SourceWatermark, c.SourceWatermark)
		e.Detail = map[string]any{"source_watermark": row.SourceWatermark}
		return nil, e
	case bytes.Equal(row.Envelope, c.Envelope):
		res.Status = SubmitReplayed
		return res, nil
	default:
		n := *row
		n.Degraded, n.Conflicts, n.UpdatedAtMs = true, row.Conflicts+1, tx.Now
		if err := tx.Insert(tableChannels, &n); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "degrade channel: %v", err)
		}
		tx.Emit("projection_degraded", c.TargetID+"/"+c.Channel, "")
		// Committed, but not kept for replay: the conflict is the answer
		// to every such submission.
		tx.Refuse()
		res.Status, res.Decision = string(errs.CodeConflict), errs.Decision(errs.CodeConflict)
		res.Message = fmt.Sprintf("channel %s of target %s holds another envelope at watermark %d: source conflict, the channel is degraded until a higher watermark arrives", c.Channel, c.TargetID, c.SourceWatermark)
		return res, nil
	}
}

func getChannel(s fsm.Store, target, channel string) (*channelRow, error) {
	raw, err := s.First(tableChannels, "id", target, channel)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read channel: %v", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*channelRow), nil
}
