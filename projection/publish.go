package projection

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/log"
)

// applyPublish is the spec's serialized write transaction. In one command
// it revalidates the lease (token hash, epoch, not consumed, not expired
// at FSM time), reads the latest channel rows, composes the publication,
// records it (publication_seq is this entry's log index: strictly
// increasing per target, never reissued after a restore) and ends the
// lease. The file is written by an effect that runs after this command
// commits and before the next one is applied, so no takeover can be
// applied between the check and the rename. A refused publish writes
// nothing, on any node.
func (h handlers) applyPublish(tx *fsm.Tx, _ *log.Command, c *fenceCmd) (any, error) {
	t, err := holdable(tx, c.TargetID)
	if err != nil {
		return nil, err
	}
	l, err := fencedLease(tx, c)
	if err != nil {
		return nil, err
	}
	switch l.stateAt(tx.Now) {
	case LeaseHeld:
	case LeasePublished:
		// A retry of the publish that consumed this lease (its outcome
		// was unknown to the holder) answers that publication again.
		if p, err := getPublication(tx, c.TargetID); err != nil {
			return nil, err
		} else if p != nil && p.FencingEpoch == l.FencingEpoch {
			res := p.result()
			res.Replayed = true
			return res, nil
		}
		return nil, errs.Errorf(errs.CodeStaleFence, "the lease at fencing epoch %d of target %s was consumed", l.FencingEpoch, c.TargetID)
	case LeaseExpired:
		return nil, errs.Errorf(errs.CodeExpired, "the lease at fencing epoch %d of target %s expired at %d; FSM time is %d", l.FencingEpoch, c.TargetID, l.ExpiresAtMs, tx.Now)
	default:
		return nil, errs.Errorf(errs.CodeStaleFence, "the lease at fencing epoch %d of target %s was %s", l.FencingEpoch, c.TargetID, l.State)
	}
	if prev, err := getPublication(tx, c.TargetID); err != nil {
		return nil, err
	} else if prev != nil && prev.PublicationSeq >= tx.Index {
		return nil, errs.Errorf(errs.CodeInternal, "publication %d of %s is ahead of log index %d", prev.PublicationSeq, c.TargetID, tx.Index)
	}
	body, err := compose(tx, t, tx.Index, l.FencingEpoch, tx.Now)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	p := &publicationRow{TargetID: c.TargetID, PublicationSeq: tx.Index, FencingEpoch: l.FencingEpoch,
		PublishedAtMs: tx.Now, SHA256: hex.EncodeToString(sum[:]), Bytes: body}
	if err := tx.Insert(tablePublications, p); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "store publication: %v", err)
	}
	n := *l
	n.State, n.EndedAtMs = LeasePublished, tx.Now
	if err := tx.Insert(tableLeases, &n); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "consume lease: %v", err)
	}
	tx.Emit("projection_publish", c.TargetID, "")
	if w := h.writer(); w != nil {
		w.publish(tx, p)
	}
	return p.result(), nil
}

func (p *publicationRow) result() *PublishResult {
	return &PublishResult{TargetID: p.TargetID, PublicationSeq: p.PublicationSeq, FencingEpoch: p.FencingEpoch,
		PublishedAtMs: p.PublishedAtMs, Bytes: len(p.Bytes), SHA256: p.SHA256}
}

func getPublication(s fsm.Store, target string) (*publicationRow, error) {
	raw, err := s.First(tablePublications, "id", target)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "read publication: %v", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*publicationRow), nil
}
