package allocation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sort"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
	"github.com/arbiterhq/arbiter/internal/canon"
	"github.com/arbiterhq/arbiter/log"
)

// Proposal is one create_task intent of an allocation window.
type Proposal struct {
	ProposalID     string  `json:"proposal_id" msgpack:"proposal_id"`
	Title          string  `json:"title" msgpack:"title"`
	DeliveryMode   string  `json:"delivery_mode" msgpack:"delivery_mode"`
	WorkItemID     *string `json:"work_item_id,omitempty" msgpack:"work_item_id"`
	ReceivedSeq    *uint64 `json:"received_seq,omitempty" msgpack:"received_seq"`
	IdempotencyKey string  `json:"idempotency_key,omitempty" msgpack:"idempotency_key"`
}

// PayloadSHA256 is the SHA-256 (lowercase hex) of the proposal's
// canonical JSON (internal/canon: keys sorted, compact; absent optional
// fields omitted): the window's second ordering key.
func (p Proposal) PayloadSHA256() string {
	b, err := canon.Value(p)
	if err != nil { // a string that is not UTF-8: refused before ordering
		b = nil
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// windowCmd is the payload of CmdWindow.
type windowCmd struct {
	Space     string     `msgpack:"space"`
	Proposals []Proposal `msgpack:"proposals"`
}

// validate checks the window's shape. A proposal that cannot form a key
// is not a shape error: it gets its own 422 in the results. What every
// proposal needs before the window can be ordered at all is checked here
// and refuses the whole window: a unique proposal_id, strings of valid
// UTF-8 (the canonical JSON behind payload_sha256 has no other) within
// their bounds, a received_seq every JSON reader holds exactly.
func (c *windowCmd) validate() error {
	if err := checkSlug(c.Space); err != nil {
		return err
	}
	if len(c.Proposals) == 0 || len(c.Proposals) > MaxProposals {
		return errs.Errorf(errs.CodeInvalid, "a window holds 1 to %d proposals, not %d", MaxProposals, len(c.Proposals))
	}
	seen := make(map[string]bool, len(c.Proposals))
	for i, p := range c.Proposals {
		if err := p.validateShape(seen); err != nil {
			return errs.Errorf(errs.CodeInvalid, "proposals[%d]: %s", i, errs.From(err).Message)
		}
	}
	return nil
}

// validateShape is validate for one proposal; seen holds the proposal
// ids before it.
func (p *Proposal) validateShape(seen map[string]bool) error {
	if err := checkProposalID(p.ProposalID); err != nil {
		return err
	}
	if seen[p.ProposalID] {
		return errs.Errorf(errs.CodeInvalid, "proposal_id %q appears twice in the window", clip(p.ProposalID))
	}
	seen[p.ProposalID] = true
	if p.ReceivedSeq != nil && *p.ReceivedSeq > MaxReceivedSeq {
		return errs.Errorf(errs.CodeInvalid, "received_seq above %d", int64(MaxReceivedSeq))
	}
	if err := checkIdemKey(p.IdempotencyKey); err != nil {
		return err
	}
	if err := checkText("title", p.Title, MaxTitleBytes); err != nil {
		return err
	}
	// A mode no space could list is still only this proposal's 422 (an
	// unknown delivery mode); the bound here only keeps the command small.
	if err := checkText("delivery_mode", p.DeliveryMode, MaxTitleBytes); err != nil {
		return err
	}
	if p.WorkItemID != nil {
		return checkText("work_item_id", *p.WorkItemID, MaxTitleBytes)
	}
	return nil
}

// WindowEntry is one proposal's answer: its status (201, 409 or 422) and
// the body a single request would have had.
type WindowEntry struct {
	ProposalID string      `msgpack:"proposal_id"`
	Status     int         `msgpack:"status"`
	Task       *Task       `msgpack:"task"`
	Conflict   *Conflict   `msgpack:"conflict"`
	Error      *errs.Error `msgpack:"error"`
	Replayed   bool        `msgpack:"replayed"`
}

// MarshalJSON is {proposal_id, status, body}: body {task} for 201, the
// flat conflict for 409, the standard error envelope otherwise.
func (e WindowEntry) MarshalJSON() ([]byte, error) {
	var body any
	switch {
	case e.Task != nil:
		body = TaskResult{Task: *e.Task}
	case e.Conflict != nil:
		body = e.Conflict
	default:
		body = map[string]*errs.Error{"error": e.Error}
	}
	return json.Marshal(struct {
		ProposalID string `json:"proposal_id"`
		Status     int    `json:"status"`
		Body       any    `json:"body"`
	}{e.ProposalID, e.Status, body})
}

// WindowResult is the answer of POST /v1/spaces/{slug}/windows: one entry
// per proposal, in processing order.
type WindowResult struct {
	Results []WindowEntry `json:"results" msgpack:"results"`
}

// windowOrder sorts proposals by received_seq (absent: 0), then by
// payload_sha256: the order a window processes them in.
func windowOrder(ps []Proposal) []Proposal {
	type keyed struct {
		p   Proposal
		seq uint64
		sum string
	}
	ks := make([]keyed, len(ps))
	for i, p := range ps {
		ks[i] = keyed{p: p, sum: p.PayloadSHA256()}
		if p.ReceivedSeq != nil {
			ks[i].seq = *p.ReceivedSeq
		}
	}
	sort.SliceStable(ks, func(i, j int) bool {
		if ks[i].seq != ks[j].seq {
			return ks[i].seq < ks[j].seq
		}
		return ks[i].sum < ks[j].sum
	})
	out := make([]Proposal, len(ks))
	for i, k := range ks {
		out[i] = k.p
	}
	return out
}

// applyWindow processes a window's proposals in order, each against the
// state the ones before it left: the first to reach a free key creates
// the task, later ones on the same key lose with 409 (from version 2 on
// conflict_key_reserved naming the proposal that took the key, as the
// window reserves before it mutates; version 1 named the task it made),
// and a proposal that cannot form a key gets 422. One command: every
// replica decides the same winners, and nothing of the window is
// half-applied.
func applyWindow(tx *fsm.Tx, _ *log.Command, c *windowCmd) (any, error) {
	sp, err := spaceIn(tx, tx.Principal, c.Space, identity.RoleMember)
	if err != nil {
		return nil, err
	}
	v := tx.EnabledVersion(CmdWindow)
	next := sp.NextTaskID
	res := &WindowResult{Results: make([]WindowEntry, 0, len(c.Proposals))}
	var win *inWindow
	if v >= 2 {
		win = &inWindow{taken: make(map[ConflictKey]string, len(c.Proposals))} // looked up only, never iterated
	}
	for _, p := range windowOrder(c.Proposals) {
		e := WindowEntry{ProposalID: p.ProposalID}
		if win != nil {
			win.proposal = p.ProposalID
		}
		out, err := createTask(tx, sp, Intent{Title: p.Title, DeliveryMode: p.DeliveryMode, WorkItemID: p.WorkItemID}, p.IdempotencyKey, v, win)
		switch {
		case err != nil && errs.CodeOf(err) == errs.CodeInternal:
			return nil, err
		case err != nil:
			e.Error = errs.From(err)
			e.Status = errs.Status(e.Error.Code)
		case out.Conflict != nil:
			e.Conflict, e.Status = out.Conflict, http.StatusConflict
		default:
			e.Task, e.Replayed, e.Status = out.Task, out.Replayed, http.StatusCreated
		}
		res.Results = append(res.Results, e)
	}
	if sp.NextTaskID != next {
		if err := tx.Insert(tableSpaces, sp); err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "write space: %v", err)
		}
	}
	return res, nil
}

// TaskResult is the body of a task answer: {task}.
type TaskResult struct {
	Task Task `json:"task" msgpack:"task"`
	// Replayed: an Idempotency-Key retry answered with the original body.
	Replayed bool `json:"-" msgpack:"replayed"`
}
