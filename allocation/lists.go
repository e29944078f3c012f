package allocation

import (
	"context"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/identity"
)

// The lists a user needs besides tasks and notes: the spaces a principal
// may read, and a space's live reservations and occupancy. Each is a
// page of at most MaxPage rows by its table's key, after an opaque
// cursor; a page examines at most maxScanPerPage rows, so one that skips
// many (other tenants' spaces, expired reservations) may come back short
// with a cursor, but never loops.

// SpacePage is a page of spaces, by slug.
type SpacePage struct {
	Spaces     []Space `json:"spaces" msgpack:"spaces"`
	NextCursor string  `json:"next_cursor" msgpack:"next_cursor"`
}

type spacesQuery struct {
	Cursor string `msgpack:"cursor"`
	Limit  int    `msgpack:"limit"`
}

// runSpaces lists the spaces whose tenant the principal reads in.
func runSpaces(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q spacesQuery
	if err := fsm.DecodePayload(payload, &q); err != nil {
		return nil, err
	}
	if err := checkLimit(q.Limit); err != nil {
		return nil, err
	}
	if !rt.Principal.HasRole(identity.RoleReader) {
		return nil, errs.Errorf(errs.CodeForbidden, "principal %q lacks the %s role", rt.Principal.ID, identity.RoleReader)
	}
	pos, err := decodeCursorBytes("spaces", "", q.Cursor, maxCursorLen)
	if err != nil {
		return nil, err
	}
	after := string(pos)
	it, err := rt.Txn.LowerBound(tableSpaces, "id", after)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "scan spaces: %v", err)
	}
	page := &SpacePage{Spaces: []Space{}}
	last, scanned := "", 0
	for raw := it.Next(); raw != nil; raw = it.Next() {
		sp := raw.(*spaceRow)
		if q.Cursor != "" && sp.Slug == after {
			continue
		}
		if len(page.Spaces) == q.Limit || scanned == maxScanPerPage {
			page.NextCursor = encodeCursorBytes("spaces", "", []byte(last))
			break
		}
		scanned++
		last = sp.Slug
		if rt.Principal.InTenant(sp.Space.TenantRef) {
			page.Spaces = append(page.Spaces, sp.Space)
		}
	}
	return page, nil
}

// ReservationPage is a page of a space's live reservations (reserved
// and not expired, or committed), by proposal id.
type ReservationPage struct {
	Reservations []Reservation `json:"reservations" msgpack:"reservations"`
	NextCursor   string        `json:"next_cursor" msgpack:"next_cursor"`
}

type spacePageQuery struct {
	Slug   string `msgpack:"slug"`
	Cursor string `msgpack:"cursor"`
	Limit  int    `msgpack:"limit"`
}

func (q *spacePageQuery) decode(rt *fsm.ReadTx, payload []byte) (*spaceRow, error) {
	if err := fsm.DecodePayload(payload, q); err != nil {
		return nil, err
	}
	if err := checkLimit(q.Limit); err != nil {
		return nil, err
	}
	return readableSpace(rt, q.Slug)
}

func runReservations(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q spacePageQuery
	sp, err := q.decode(rt, payload)
	if err != nil {
		return nil, err
	}
	pos, err := decodeCursorBytes("reservations", sp.Slug, q.Cursor, maxCursorLen)
	if err != nil {
		return nil, err
	}
	after := string(pos)
	it, err := rt.Txn.LowerBound(tableReservations, "id", sp.Slug, after)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "scan reservations: %v", err)
	}
	page := &ReservationPage{Reservations: []Reservation{}}
	last, scanned := "", 0
	for raw := it.Next(); raw != nil; raw = it.Next() {
		r := raw.(*reservationRow)
		if r.Space != sp.Slug {
			break
		}
		if q.Cursor != "" && r.ProposalID == after {
			continue
		}
		if len(page.Reservations) == q.Limit || scanned == maxScanPerPage {
			page.NextCursor = encodeCursorBytes("reservations", sp.Slug, []byte(last))
			break
		}
		scanned++
		last = r.ProposalID
		if r.State == ReservationCommitted || rt.Now < r.ExpiresAtMs {
			page.Reservations = append(page.Reservations, r.view())
		}
	}
	return page, nil
}

// OccupancyPage is a page of the keys a space's occupants hold now, by
// key (kind, target, delivery_mode).
type OccupancyPage struct {
	Occupancy  []Occupancy `json:"occupancy" msgpack:"occupancy"`
	NextCursor string      `json:"next_cursor" msgpack:"next_cursor"`
}

func runOccupancy(rt *fsm.ReadTx, payload []byte) (any, error) {
	var q spacePageQuery
	sp, err := q.decode(rt, payload)
	if err != nil {
		return nil, err
	}
	pos, err := decodeCursorBytes("occupancy", sp.Slug, q.Cursor, maxKeyCursorLen)
	if err != nil {
		return nil, err
	}
	var after ConflictKey
	if q.Cursor != "" {
		f, ok := fieldsOf(pos, 3)
		if !ok {
			return nil, badCursor("occupancy")
		}
		after = ConflictKey{Kind: f[0], Target: f[1], DeliveryMode: f[2]}
	}
	it, err := rt.Txn.LowerBound(tableOccupancy, "id", sp.Slug, after.Kind, after.Target, after.DeliveryMode)
	if err != nil {
		return nil, errs.Errorf(errs.CodeInternal, "scan occupancy: %v", err)
	}
	page := &OccupancyPage{Occupancy: []Occupancy{}}
	var last ConflictKey
	scanned := 0
	for raw := it.Next(); raw != nil; raw = it.Next() {
		o := raw.(*occupancyRow)
		if o.Space != sp.Slug {
			break
		}
		if q.Cursor != "" && o.key() == after {
			continue
		}
		if len(page.Occupancy) == q.Limit || scanned == maxScanPerPage {
			page.NextCursor = encodeCursorBytes("occupancy", sp.Slug, cursorFields(last.Kind, last.Target, last.DeliveryMode))
			break
		}
		scanned++
		last = o.key()
		if !o.live(rt.Now) {
			continue
		}
		w, err := winnerOf(rt.Txn, o, rt.Now)
		if err != nil {
			return nil, err
		}
		page.Occupancy = append(page.Occupancy, Occupancy{ConflictKey: o.key(), Winner: w, ProposalID: o.ProposalID, ExpiresAtMs: o.ExpiresAtMs})
	}
	return page, nil
}

// ListSpaces reads a page of the spaces the caller may read, by slug
// (limit 1..128, 0: 128; after: a NextCursor).
func (s *Service) ListSpaces(ctx context.Context, after string, limit int, cons fsm.Consistency) (*SpacePage, error) {
	if limit == 0 {
		limit = MaxPage
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	var out SpacePage
	if err := fsm.Ask(ctx, s.r, QuerySpaces, cons == fsm.Stale, spacesQuery{Cursor: after, Limit: limit}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListReservations reads a page of a space's live reservations by
// proposal id.
func (s *Service) ListReservations(ctx context.Context, slug, after string, limit int, cons fsm.Consistency) (*ReservationPage, error) {
	var out ReservationPage
	if err := s.spacePage(ctx, QueryReservations, slug, after, limit, cons, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListOccupancy reads a page of the keys held in a space now, each with
// its holder (a task with its status, a note, a reserved intent with its
// expiry, an external object).
func (s *Service) ListOccupancy(ctx context.Context, slug, after string, limit int, cons fsm.Consistency) (*OccupancyPage, error) {
	var out OccupancyPage
	if err := s.spacePage(ctx, QueryOccupancy, slug, after, limit, cons, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (s *Service) spacePage(ctx context.Context, q fsm.QueryType, slug, after string, limit int, cons fsm.Consistency, out any) error {
	if limit == 0 {
		limit = MaxPage
	}
	if err := checkSlug(slug); err != nil {
		return err
	}
	if err := checkLimit(limit); err != nil {
		return err
	}
	return fsm.Ask(ctx, s.r, q, cons == fsm.Stale, spacePageQuery{Slug: slug, Cursor: after, Limit: limit}, out)
}
