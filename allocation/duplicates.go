package allocation

import (
	"context"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// Duplicate is a task that wants its own key while something else holds
// it: for a steward to supersede (in favour of the holder, or the other
// way round), or to wait until the key frees and it takes it.
type Duplicate struct {
	TaskID      uint64      `json:"task_id" msgpack:"task_id"`
	Title       string      `json:"title" msgpack:"title"`
	Status      string      `json:"status" msgpack:"status"`
	ConflictKey ConflictKey `json:"conflict_key" msgpack:"conflict_key"`
	HeldBy      Winner      `json:"held_by" msgpack:"held_by"`
}

// DuplicatePage is a page of a space's duplicates, by task id.
type DuplicatePage struct {
	Duplicates []Duplicate `json:"duplicates" msgpack:"duplicates"`
	NextCursor string      `json:"next_cursor" msgpack:"next_cursor"`
}

type duplicatesQuery struct {
	Slug   string `msgpack:"slug"`
	Cursor string `msgpack:"cursor"`
	Limit  int    `msgpack:"limit"`
}

func runDuplicates(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q duplicatesQuery
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
	after, err := decodeCursor("duplicates", sp.Slug, q.Cursor)
	if err != nil {
		return nil, err
	}
	return duplicatesPage(rt.Txn, sp.Slug, after, q.Limit, rt.Now)
}

// duplicatesPage lists up to limit duplicates of space after task id
// after, each with what holds its key at now.
func duplicatesPage(s fsm.Store, space string, after uint64, limit int, now int64) (*DuplicatePage, error) {
	it, err := s.LowerBound(tableDuplicates, "id", space, after+1)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "scan duplicates: %v", err)
	}
	page := &DuplicatePage{Duplicates: []Duplicate{}}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		d := raw.(*dupRow)
		if d.Space != space {
			break
		}
		if len(page.Duplicates) == limit {
			page.NextCursor = encodeCursor("duplicates", space, page.Duplicates[limit-1].TaskID)
			break
		}
		t, err := getTask(s, space, d.TaskID)
		if err != nil {
			return nil, errs.Errorf(errs.CodeInternal, "duplicate names task %d: %v", d.TaskID, err)
		}
		e := Duplicate{TaskID: t.ID, Title: t.Title, Status: t.Status, ConflictKey: d.key()}
		if o, err := getOccupancy(s, space, d.key()); err != nil {
			return nil, err
		} else if o != nil {
			w, err := winnerOf(s, o, now)
			if err != nil {
				return nil, err
			}
			e.HeldBy = w
		}
		page.Duplicates = append(page.Duplicates, e)
	}
	return page, nil
}

// ListDuplicates reads a page of a space's duplicates by task id: tasks
// that want their own key while something else holds it.
func (s *Service) ListDuplicates(ctx context.Context, slug, after string, limit int, cons fsm.Consistency) (*DuplicatePage, error) {
	if limit == 0 {
		limit = MaxPage
	}
	if err := checkSlug(slug); err != nil {
		return nil, err
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	var out DuplicatePage
	if err := fsm.Ask(ctx, s.r, QueryDuplicates, cons == fsm.Stale, duplicatesQuery{Slug: slug, Cursor: after, Limit: limit}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
