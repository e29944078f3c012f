package allocation

import (
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/log"
)

// noteCmd is the payload of CmdPostNote.
type noteCmd struct {
	Space          string `msgpack:"space"`
	TaskID         uint64 `msgpack:"task_id"`
	Kind           string `msgpack:"kind"`
	CriterionIndex *int64 `msgpack:"criterion_index"`
	Body           string `msgpack:"body"`
	DeliveryMode   string `msgpack:"delivery_mode"`
	IdempotencyKey string `msgpack:"idempotency_key"`
}

func (c *noteCmd) validate() error {
	if err := checkSlug(c.Space); err != nil {
		return err
	}
	if c.Kind != KindPostReviewNote {
		return errs.Errorf(errs.CodeInvalid, "kind %q: want %q", clip(c.Kind), KindPostReviewNote)
	}
	if c.CriterionIndex != nil && (*c.CriterionIndex < 0 || *c.CriterionIndex > MaxCriterionIndex) {
		return errs.Errorf(errs.CodeInvalid, "criterion_index must be null or between 0 and %d", MaxCriterionIndex)
	}
	if err := checkText("body", c.Body, MaxNoteBodyBytes); err != nil {
		return err
	}
	if NormalizeNoteBody(c.Body) == "" {
		return errs.New(errs.CodeInvalid, "body is empty after normalization")
	}
	return checkIdemKey(c.IdempotencyKey)
}

// applyPostNote posts a note unless its key (task, criterion, principal,
// body hash, delivery mode) is held: the same principal posting the same
// body on the same criterion of a task twice gets one note and a 409.
// Notes hold their keys for good.
func applyPostNote(tx *fsm.Tx, _ *log.Command, c *noteCmd) (any, error) {
	sp, err := spaceIn(tx, tx.Principal, c.Space, identity.RoleMember)
	if err != nil {
		return nil, err
	}
	v := tx.EnabledVersion(CmdPostNote)
	if v < 2 { // version 1 judged the mode and the task before the Idempotency-Key
		if err := checkNoteTarget(tx, sp, c); err != nil {
			return nil, err
		}
	}
	who := principalID(tx.Principal)
	var idID, digest string
	if c.IdempotencyKey != "" {
		idID = idemID(sp.Slug, scopeNote, who, c.IdempotencyKey)
		digest = noteDigest(c)
		row, err := getIdem(tx, idID)
		if err != nil {
			return nil, err
		}
		if row != nil {
			if row.Digest != digest {
				return nil, errs.Errorf(errs.CodeIdempotencyConflict, "Idempotency-Key %q was used for another request", clip(c.IdempotencyKey))
			}
			n, err := getNote(tx, sp.Slug, row.Ref)
			if err != nil || n == nil {
				return nil, errs.Errorf(errs.CodeInternal, "idempotency key names missing note %d: %v", row.Ref, err)
			}
			out := *n
			return &Outcome{Note: &out, Replayed: true}, nil
		}
	}
	if err := checkNoteTarget(tx, sp, c); err != nil {
		return nil, err
	}
	t, err := getTask(tx, sp.Slug, c.TaskID)
	if err != nil {
		return nil, err
	}
	if t.Status == StatusSuperseded {
		return &Outcome{Conflict: superseded(t)}, nil
	}
	k := ConflictKey{Kind: KindPostReviewNote, Target: noteTarget(sp.Slug, t.ID, c.CriterionIndex, who, c.Body), DeliveryMode: c.DeliveryMode}
	if o, err := liveOccupant(tx, sp.Slug, k, tx.Now); err != nil {
		return nil, err
	} else if o != nil {
		cf, err := conflictOf(tx, o)
		if err != nil {
			return nil, err
		}
		return &Outcome{Conflict: cf}, nil
	}
	n := &Note{ID: sp.NextNoteID, Space: sp.Slug, TaskID: t.ID, CriterionIndex: c.CriterionIndex, Principal: who, ConflictKey: k,
		Body: c.Body, CreatedAtMs: tx.Now}
	sp.NextNoteID++
	if err := tx.Insert(tableNotes, n); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "write note: %v", err)
	}
	if err := occupy(tx, sp.Slug, k, occupancyRow{WinnerType: WinnerNote, WinnerID: NumID(n.ID)}); err != nil {
		return nil, err
	}
	if err := tx.Insert(tableSpaces, sp); err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "write space: %v", err)
	}
	if c.IdempotencyKey != "" {
		if err := tx.Insert(tableIdem, &idemRow{ID: idID, Digest: digest, Ref: n.ID}); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "record idempotency key: %v", err)
		}
	}
	tx.Emit("allocation_note_posted", sp.Slug+"/"+itoa(n.ID), sp.Space.TenantRef)
	out := *n
	return &Outcome{Note: &out}, nil
}

// checkNoteTarget requires a delivery mode of the space and an existing
// task.
func checkNoteTarget(tx *fsm.Tx, sp *spaceRow, c *noteCmd) error {
	if !slices.Contains(sp.Space.DeliveryModes, c.DeliveryMode) {
		return errs.Errorf(errs.CodeInvalid, "delivery_mode %q is not one of space %q's modes %v", clip(c.DeliveryMode), sp.Slug, sp.Space.DeliveryModes)
	}
	_, err := getTask(tx, sp.Slug, c.TaskID)
	return err
}

func noteDigest(c *noteCmd) string {
	task, crit := itoa(c.TaskID), "none"
	if c.CriterionIndex != nil {
		crit = itoa(uint64(*c.CriterionIndex))
	}
	return intentDigest(&task, &c.Kind, &crit, &c.Body, &c.DeliveryMode)
}

// NoteResult is the body of a note answer: {note}.
type NoteResult struct {
	Note     Note `json:"note" msgpack:"note"`
	Replayed bool `json:"-" msgpack:"replayed"`
}
