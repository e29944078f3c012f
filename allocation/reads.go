package allocation

import (
	"slices"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
)

// Queries read with the reader role in the space's tenant.

type spaceQuery struct {
	Slug string `msgpack:"slug"`
}

func readableSpace(rt *fsm.ReadTx, slug string) (*spaceRow, error) {
	if err := checkSlug(slug); err != nil {
		return nil, err
	}
	return spaceFor(rt.Txn, rt.Principal, slug, identity.RoleReader)
}

func runSpace(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q spaceQuery
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	sp, err := readableSpace(rt, q.Slug)
	if err != nil {
		return nil, err
	}
	return &SpaceResult{Space: sp.Space}, nil
}

// BindResult explains a bind: the work item bound (nil: the title
// fallback), the target, and every catalog row's exact score.
type BindResult struct {
	WorkItemID *string `json:"work_item_id" msgpack:"work_item_id"`
	Target     string  `json:"target" msgpack:"target"`
	Scores     []Score `json:"scores" msgpack:"scores"`
}

type bindQuery struct {
	Slug       string  `msgpack:"slug"`
	Title      string  `msgpack:"title"`
	WorkItemID *string `msgpack:"work_item_id"`
}

// runBind is the bind of a create_task, explained; nothing is written.
// The delivery mode plays no part in the target, so it is not asked.
func runBind(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q bindQuery
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	sp, err := readableSpace(rt, q.Slug)
	if err != nil {
		return nil, err
	}
	bk, err := keyOf(sp, Intent{Title: q.Title, DeliveryMode: sp.Space.DeliveryModes[0], WorkItemID: q.WorkItemID}, rt.EnabledVersion(CmdCreateTask))
	if err != nil {
		return nil, err
	}
	_, scores := bindSpace(sp, q.Title)
	if scores == nil {
		scores = []Score{}
	}
	return &BindResult{WorkItemID: bk.workItem, Target: bk.key.Target, Scores: scores}, nil
}

type taskQuery struct {
	Slug   string `msgpack:"slug"`
	TaskID uint64 `msgpack:"task_id"`
}

func runTask(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q taskQuery
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	sp, err := readableSpace(rt, q.Slug)
	if err != nil {
		return nil, err
	}
	t, err := getTask(rt.Txn, sp.Slug, q.TaskID)
	if err != nil {
		return nil, err
	}
	return &TaskResult{Task: *t}, nil
}

// TaskPage is a page of tasks, by id; NextCursor goes on ("" at the end).
type TaskPage struct {
	Tasks      []Task `json:"tasks" msgpack:"tasks"`
	NextCursor string `json:"next_cursor" msgpack:"next_cursor"`
}

type tasksQuery struct {
	Slug              string `msgpack:"slug"`
	Status            string `msgpack:"status"`
	IncludeSuperseded bool   `msgpack:"include_superseded"`
	Cursor            string `msgpack:"cursor"`
	Limit             int    `msgpack:"limit"`
}

// filter names what a page lists, so that a cursor serves only the
// query that issued it. ("live" means not superseded here; the word is
// part of every cursor already issued.)
func (q *tasksQuery) filter() string {
	which := "live"
	if q.IncludeSuperseded {
		which = "all"
	}
	return q.Slug + "\x00" + q.Status + "\x00" + which
}

func (q *tasksQuery) validate() error {
	if q.Status != "" && !slices.Contains(Statuses, q.Status) {
		return errs.Errorf(errs.CodeInvalid, "status %q: want one of %v", clip(q.Status), Statuses)
	}
	return checkLimit(q.Limit)
}

func checkLimit(n int) error {
	if n < 1 || n > MaxPage {
		return errs.Errorf(errs.CodeInvalid, "limit must be between 1 and %d", MaxPage)
	}
	return nil
}

// runTasks lists a space's tasks by id, of one status or all but the
// superseded (unless included; asking for status superseded includes
// them). A page examines at most maxScanPerPage rows: it may come back
// short, with a cursor, but never loops.
func runTasks(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q tasksQuery
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	if err := q.validate(); err != nil {
		return nil, err
	}
	sp, err := readableSpace(rt, q.Slug)
	if err != nil {
		return nil, err
	}
	after, err := decodeCursor("tasks", q.filter(), q.Cursor)
	if err != nil {
		return nil, err
	}
	index, args := "id", []any{sp.Slug, after + 1}
	if q.Status != "" {
		index, args = "status", []any{sp.Slug, q.Status, after + 1}
	}
	it, err := rt.Txn.LowerBound(tableTasks, index, args...)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "scan tasks: %v", err)
	}
	page := &TaskPage{Tasks: []Task{}}
	var last uint64
	scanned := 0
	for raw := it.Next(); raw != nil; raw = it.Next() {
		t := raw.(*Task)
		if t.Space != sp.Slug || (q.Status != "" && t.Status != q.Status) {
			break
		}
		if len(page.Tasks) == q.Limit || scanned == maxScanPerPage {
			page.NextCursor = encodeCursor("tasks", q.filter(), last)
			break
		}
		scanned++
		last = t.ID
		if t.Status == StatusSuperseded && !q.IncludeSuperseded && q.Status != StatusSuperseded {
			continue
		}
		page.Tasks = append(page.Tasks, *t)
	}
	return page, nil
}

// NotePage is a page of a task's notes, by id.
type NotePage struct {
	Notes      []Note `json:"notes" msgpack:"notes"`
	NextCursor string `json:"next_cursor" msgpack:"next_cursor"`
}

type notesQuery struct {
	Slug   string `msgpack:"slug"`
	TaskID uint64 `msgpack:"task_id"`
	Cursor string `msgpack:"cursor"`
	Limit  int    `msgpack:"limit"`
}

func runNotes(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q notesQuery
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	if err := checkLimit(q.Limit); err != nil {
		return nil, err
	}
	sp, err := readableSpace(rt, q.Slug)
	if err != nil {
		return nil, err
	}
	if _, err := getTask(rt.Txn, sp.Slug, q.TaskID); err != nil {
		return nil, err
	}
	filter := sp.Slug + "\x00" + itoa(q.TaskID)
	after, err := decodeCursor("notes", filter, q.Cursor)
	if err != nil {
		return nil, err
	}
	it, err := rt.Txn.LowerBound(tableNotes, "task", sp.Slug, q.TaskID, after+1)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "scan notes: %v", err)
	}
	page := &NotePage{Notes: []Note{}}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		n := raw.(*Note)
		if n.Space != sp.Slug || n.TaskID != q.TaskID {
			break
		}
		if len(page.Notes) == q.Limit {
			page.NextCursor = encodeCursor("notes", filter, page.Notes[len(page.Notes)-1].ID)
			break
		}
		page.Notes = append(page.Notes, *n)
	}
	return page, nil
}
