package allocation

import (
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/bounds"
	"github.com/arbiterhq/arbiter/log"
)

// Intent is what a create_task proposal asks for.
type Intent struct {
	Title        string  `json:"title" msgpack:"title"`
	DeliveryMode string  `json:"delivery_mode" msgpack:"delivery_mode"`
	WorkItemID   *string `json:"work_item_id,omitempty" msgpack:"work_item_id"`
}

// boundKey is an intent's conflict key and the work item behind it.
type boundKey struct {
	key      ConflictKey
	workItem *string // nil: the title fallback
	given    bool
}

// validate is what can be checked of an intent without its space: a
// title of valid UTF-8 within its bound that normalize_title leaves
// non-empty, and a well-formed work_item_id. Each failure is invalid
// (422): no conflict key can be formed.
func (in Intent) validate() error {
	if err := checkText("title", in.Title, MaxTitleBytes); err != nil {
		return err
	}
	if NormalizeTitle(in.Title) == "" {
		return errs.New(errs.CodeInvalid, "title is empty after normalization: no conflict key can be formed")
	}
	if in.WorkItemID != nil {
		if _, err := NormalizeWorkItemID(*in.WorkItemID); err != nil {
			return err
		}
	}
	return nil
}

// keyOf forms the intent's conflict key in sp (charter-index bind when
// no work_item_id is given), or fails invalid (422) when none can be
// formed: validate's failures, or a delivery mode the space does not
// list. A title of stopwords only still forms a key: it never binds, so
// it takes the title fallback.
func keyOf(sp *spaceRow, in Intent) (boundKey, error) {
	if err := in.validate(); err != nil {
		return boundKey{}, err
	}
	if !slices.Contains(sp.Space.DeliveryModes, in.DeliveryMode) {
		return boundKey{}, errs.Errorf(errs.CodeInvalid, "delivery_mode %q is not one of space %q's modes %v", clip(in.DeliveryMode), sp.Slug, sp.Space.DeliveryModes)
	}
	k := ConflictKey{Kind: KindCreateTask, DeliveryMode: in.DeliveryMode}
	if in.WorkItemID != nil {
		id, _ := NormalizeWorkItemID(*in.WorkItemID) // validated above
		k.Target = slotTarget(sp.Slug, id)
		return boundKey{key: k, workItem: &id, given: true}, nil
	}
	if best, _ := bindSpace(sp, in.Title); best >= 0 {
		id := sp.Space.Catalog[best].WorkItemID
		k.Target = slotTarget(sp.Slug, id)
		return boundKey{key: k, workItem: &id}, nil
	}
	k.Target = titleTarget(sp.Slug, NormalizeTitle(in.Title))
	return boundKey{key: k}, nil
}

// bindSpace binds title against sp's catalog.
func bindSpace(sp *spaceRow, title string) (int, []Score) {
	ids := make([]string, len(sp.Space.Catalog))
	for i, row := range sp.Space.Catalog {
		ids[i] = row.WorkItemID
	}
	return bindTokens(Tokens(title), ids, sp.Bags)
}

// Outcome is what a command that may lose a conflict returns: what it
// made (or replayed), or the 409 body of the loser. Nothing was written
// when Conflict is set.
type Outcome struct {
	Task        *Task        `msgpack:"task"`
	Note        *Note        `msgpack:"note"`
	Reservation *Reservation `msgpack:"reservation"`
	Conflict    *Conflict    `msgpack:"conflict"`
	Replayed    bool         `msgpack:"replayed"`
}

// createTask is one create_task proposal against the current state:
// replay by Idempotency-Key, else 409 on a live occupant of its key,
// else a new open task holding the key. sp is the handler's own copy of
// the space row, whose NextTaskID it advances; the caller writes it. It
// writes nothing unless it creates.
func createTask(tx *fsm.Tx, sp *spaceRow, in Intent, idemKey string) (*Outcome, error) {
	bk, err := keyOf(sp, in)
	if err != nil {
		return nil, err
	}
	who := principalID(tx.Principal)
	var idID, digest string
	if idemKey != "" {
		idID = idemID(sp.Slug, scopeTask, who, idemKey)
		digest = intentDigest(&in.Title, &in.DeliveryMode, in.WorkItemID)
		row, err := getIdem(tx, idID)
		if err != nil {
			return nil, err
		}
		if row != nil {
			if row.Digest != digest {
				return nil, errs.Errorf(errs.CodeIdempotencyConflict, "Idempotency-Key %q was used for another request", clip(idemKey))
			}
			t, err := getTask(tx, sp.Slug, row.Ref)
			if err != nil {
				return nil, errs.Errorf(errs.CodeInternal, "idempotency key names task %d: %v", row.Ref, err)
			}
			first := creationView(t)
			return &Outcome{Task: &first, Replayed: true}, nil
		}
	}
	if o, err := liveOccupant(tx, sp.Slug, bk.key, tx.Now); err != nil {
		return nil, err
	} else if o != nil {
		c, err := conflictOf(tx, o)
		if err != nil {
			return nil, err
		}
		return &Outcome{Conflict: c}, nil
	}
	t := &Task{ID: sp.NextTaskID, Space: sp.Slug, Title: in.Title, Status: StatusOpen, WorkItemID: bk.workItem, WorkItemGiven: bk.given,
		ConflictKey: bk.key, CreatedBy: who, Version: 1, CreatedAtMs: tx.Now, UpdatedAtMs: tx.Now}
	sp.NextTaskID++
	if err := putTask(tx, t, "allocation_task_created", sp.Space.TenantRef); err != nil {
		return nil, err
	}
	if err := occupy(tx, sp.Slug, bk.key, occupancyRow{WinnerType: WinnerTask, WinnerID: NumID(t.ID)}); err != nil {
		return nil, err
	}
	if idemKey != "" {
		if err := tx.Insert(tableIdem, &idemRow{ID: idID, Digest: digest, Ref: t.ID}); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "record idempotency key: %v", err)
		}
	}
	out := *t
	return &Outcome{Task: &out}, nil
}

// creationView is t as its create answered: the fields a task is created
// with never change, so the original 201 body is rebuilt exactly.
func creationView(t *Task) Task {
	return Task{ID: t.ID, Space: t.Space, Title: t.Title, Status: StatusOpen, WorkItemID: t.WorkItemID, WorkItemGiven: t.WorkItemGiven,
		ConflictKey: t.ConflictKey, CreatedBy: t.CreatedBy, Version: 1, CreatedAtMs: t.CreatedAtMs, UpdatedAtMs: t.CreatedAtMs}
}

// createCmd is the payload of CmdCreateTask.
type createCmd struct {
	Space          string `msgpack:"space"`
	Intent         Intent `msgpack:"intent"`
	IdempotencyKey string `msgpack:"idempotency_key"`
}

// validate checks what the FSM would refuse without reading the state,
// so that the service never proposes it.
func (c *createCmd) validate() error {
	if err := checkSlug(c.Space); err != nil {
		return err
	}
	if err := checkIdemKey(c.IdempotencyKey); err != nil {
		return err
	}
	return c.Intent.validate()
}

func checkIdemKey(k string) error { return bounds.OptionalIdentifier("Idempotency-Key", k) }

// applyCreateTask is one create request: a window of one.
func applyCreateTask(tx *fsm.Tx, cmd *log.Command) (any, error) {
	var c createCmd
	if err := fsm.DecodePayload(cmd.Payload, &c); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	sp, err := spaceFor(tx, tx.Principal, c.Space, log.RoleMember)
	if err != nil {
		return nil, err
	}
	out, err := createTask(tx, sp, c.Intent, c.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	if out.Task != nil && !out.Replayed {
		if err := tx.Insert(tableSpaces, sp); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "write space: %v", err)
		}
	}
	return out, nil
}
