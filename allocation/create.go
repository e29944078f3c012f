package allocation

import (
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
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

// validateShape is what a request must be before anything else about it
// is judged, the Idempotency-Key lookup included: a title and a
// work_item_id of valid UTF-8 within their bounds.
func (in Intent) validateShape() error {
	if err := checkText("title", in.Title, MaxTitleBytes); err != nil {
		return err
	}
	if in.WorkItemID != nil {
		return checkText("work_item_id", *in.WorkItemID, MaxTitleBytes)
	}
	return nil
}

// validate is what can be checked of an intent without its space, at
// command version v: its shape, a title that normalize_title leaves
// non-empty (from version 2 on, with a visible character), and a
// well-formed work_item_id. Each failure is invalid (422): no conflict
// key can be formed.
func (in Intent) validate(v uint16) error {
	if err := in.validateShape(); err != nil {
		return err
	}
	if err := checkTitle(in.Title, v); err != nil {
		return err
	}
	if in.WorkItemID != nil {
		if _, err := NormalizeWorkItemID(*in.WorkItemID); err != nil {
			return err
		}
	}
	return nil
}

// keyOf forms the intent's conflict key in sp (charter-index bind when
// no work_item_id is given) at command version v, or fails invalid (422)
// when none can be formed: validate's failures, a delivery mode the
// space does not list, or (version 2) a work_item_id its catalog does
// not list in a space without ad-hoc slots. A title of stopwords only still forms a key: it
// never binds, so it takes the title fallback.
func keyOf(sp *spaceRow, in Intent, v uint16) (boundKey, error) {
	if err := in.validate(v); err != nil {
		return boundKey{}, err
	}
	if !slices.Contains(sp.Space.DeliveryModes, in.DeliveryMode) {
		return boundKey{}, errs.Errorf(errs.CodeInvalid, "delivery_mode %q is not one of space %q's modes %v", clip(in.DeliveryMode), sp.Slug, sp.Space.DeliveryModes)
	}
	k := ConflictKey{Kind: KindCreateTask, DeliveryMode: in.DeliveryMode}
	if in.WorkItemID != nil {
		id, _ := NormalizeWorkItemID(*in.WorkItemID) // validated above
		if v >= 2 && !sp.Space.AdHocSlots && !sp.lists(id) {
			return boundKey{}, unknownWorkItem(sp, id)
		}
		k.Target = slotTarget(sp.Slug, id)
		return boundKey{key: k, workItem: &id, given: true}, nil
	}
	return bindKey(sp, in.Title, in.DeliveryMode, v), nil
}

// lists reports whether the space's catalog lists work item id
// (normalized).
func (sp *spaceRow) lists(id string) bool {
	for _, row := range sp.Space.Catalog {
		if row.WorkItemID == id {
			return true
		}
	}
	return false
}

// unknownWorkItem is the 422 for a work item the catalog does not list.
func unknownWorkItem(sp *spaceRow, id string) error {
	e := errs.Errorf(errs.CodeInvalid, "work_item_id %s is not in space %q's catalog, and the space takes no ad-hoc slots", id, sp.Slug)
	e.Detail = map[string]any{"reason": ReasonUnknownWorkItem, "work_item_id": id}
	return e
}

// bindKey is the key of a title that names no work item: the slot the
// charter-index bind picks, else the title fallback.
func bindKey(sp *spaceRow, title, mode string, v uint16) boundKey {
	k := ConflictKey{Kind: KindCreateTask, DeliveryMode: mode}
	if best, _ := bindSpace(sp, title); best >= 0 {
		id := sp.Space.Catalog[best].WorkItemID
		k.Target = slotTarget(sp.Slug, id)
		return boundKey{key: k, workItem: &id}
	}
	k.Target = titleTarget(sp.Slug, normalizeTitle(title, v))
	return boundKey{key: k}
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

// createTask is one create_task proposal against the current state at
// command version v: replay by Idempotency-Key, else 409 on a key an
// earlier proposal of its window took (win, nil outside windows and at
// version 1) or on a live occupant of its key, else a new open task
// holding the key. From
// version 2 on the key is looked up before anything else about the
// request is judged (the space's modes and catalog may have changed
// since the create it retries); before, the conflict key came first. sp
// is the handler's own copy of the space row, whose NextTaskID it
// advances; the caller writes it. It writes nothing unless it creates.
func createTask(tx *fsm.Tx, sp *spaceRow, in Intent, idemKey string, v uint16, win *inWindow) (*Outcome, error) {
	var bk boundKey
	if v < 2 {
		var err error
		if bk, err = keyOf(sp, in, v); err != nil {
			return nil, err
		}
	}
	who := principalID(tx.Principal)
	var idID, digest string
	if idemKey != "" {
		idID = idemID(sp.Slug, scopeTask, who, idemKey)
		digest = intentDigest(&in.Title, &in.DeliveryMode, in.WorkItemID)
		if out, err := replayTask(tx, sp, idID, digest, idemKey); out != nil || err != nil {
			return out, err
		}
	}
	if v >= 2 {
		var err error
		if bk, err = keyOf(sp, in, v); err != nil {
			return nil, err
		}
	}
	if win != nil {
		if pid, ok := win.taken[bk.key]; ok {
			return &Outcome{Conflict: reservedConflict(bk.key, pid)}, nil
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
	if win != nil {
		win.taken[bk.key] = win.proposal
	}
	out := *t
	return &Outcome{Task: &out}, nil
}

// inWindow is what the proposals of a window before the current one
// took (version 2): each key one of them created on, and its proposal
// id. A later proposal on such a key loses to that reservation of the
// window (spec section 3, step 3), not to the task it became.
type inWindow struct {
	taken    map[ConflictKey]string
	proposal string // the current proposal's id
}

// replayTask is the original answer of the create recorded under idID,
// idempotency_conflict if it was another request, or nil if the key is
// new.
func replayTask(tx *fsm.Tx, sp *spaceRow, idID, digest, idemKey string) (*Outcome, error) {
	row, err := getIdem(tx, idID)
	if err != nil || row == nil {
		return nil, err
	}
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

// creationView is t as its create answered: the fields a task is created
// with never change but for a rebind, which keeps what it changed in
// CreatedAs, so the original 201 body is rebuilt exactly.
func creationView(t *Task) Task {
	key, item := t.ConflictKey, t.WorkItemID
	if t.CreatedAs != nil {
		key, item = t.CreatedAs.ConflictKey, t.CreatedAs.WorkItemID
	}
	return Task{ID: t.ID, Space: t.Space, Title: t.Title, Status: StatusOpen, WorkItemID: item, WorkItemGiven: t.WorkItemGiven,
		ConflictKey: key, CreatedBy: t.CreatedBy, Version: 1, CreatedAtMs: t.CreatedAtMs, UpdatedAtMs: t.CreatedAtMs}
}

// createCmd is the payload of CmdCreateTask.
type createCmd struct {
	Space          string `msgpack:"space"`
	Intent         Intent `msgpack:"intent"`
	IdempotencyKey string `msgpack:"idempotency_key"`
}

// validate checks what the FSM would refuse without reading the state,
// so that the service never proposes it. A request with an
// Idempotency-Key is only checked for its shape: it may retry a create
// that the rules of its day accepted, and the FSM answers that from its
// record.
func (c *createCmd) validate() error {
	if err := c.validateShape(); err != nil {
		return err
	}
	if c.IdempotencyKey != "" {
		return nil
	}
	return c.Intent.validate(currentVersion)
}

// validateShape is what the FSM checks before the Idempotency-Key lookup.
func (c *createCmd) validateShape() error {
	if err := checkSlug(c.Space); err != nil {
		return err
	}
	if err := checkIdemKey(c.IdempotencyKey); err != nil {
		return err
	}
	return c.Intent.validateShape()
}

func checkIdemKey(k string) error { return bounds.OptionalIdentifier("Idempotency-Key", k) }

// applyCreateTask is one create request: a window of one.
func applyCreateTask(tx *fsm.Tx, _ *log.Command, c *createCmd) (any, error) {
	v := tx.EnabledVersion(CmdCreateTask)
	sp, err := spaceIn(tx, tx.Principal, c.Space, identity.RoleMember)
	if err != nil {
		return nil, err
	}
	out, err := createTask(tx, sp, c.Intent, c.IdempotencyKey, v, nil)
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
