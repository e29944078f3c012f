package allocation

import (
	"context"
	"net/http"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/fsm"
)

// Name is the domain's name.
const Name = "allocation"

// Domain is the allocation domain: the module, the /v1/spaces routes (any
// authenticated principal; the module checks tenant and role). The
// `arbiter space` and `arbiter task` commands are cmd/arbiter's, over
// package client.
func Domain() domain.Domain {
	return domain.Domain{Name: Name, Module: Module, Routes: routes}
}

const (
	spacesPath      = "/v1/spaces"
	spacePath       = spacesPath + "/{slug}"
	taskPath        = spacePath + "/tasks/{id}"
	reservationPath = spacePath + "/reservations/{proposal_id}"
)

func routes(h domain.Host) []domain.Route {
	s := NewService(h, h)
	ok, created := http.StatusOK, http.StatusCreated
	return []domain.Route{
		route(http.MethodPut, spacePath, ok, func(ctx context.Context, q inSpace[PutSpaceRequest]) (*SpaceResult, error) {
			return s.PutSpace(ctx, q.Slug, q.Body)
		}),
		route(http.MethodGet, spacePath, ok, func(ctx context.Context, q spaceRead) (*SpaceResult, error) {
			return s.GetSpace(ctx, q.Slug, q.Consistency)
		}),
		route(http.MethodGet, spacesPath, ok, func(ctx context.Context, q pageParams) (*SpacePage, error) {
			limit, err := q.limit()
			if err != nil {
				return nil, err
			}
			return s.ListSpaces(ctx, q.After, limit, q.Consistency)
		}),
		spacePageRoute("/reservations", s.ListReservations),
		spacePageRoute("/occupancy", s.ListOccupancy),
		spacePageRoute("/duplicates", s.ListDuplicates),
		route(http.MethodPost, spacePath+"/bind", ok, func(ctx context.Context, q inSpace[BindRequest]) (*BindResult, error) {
			return s.Bind(ctx, q.Slug, q.Body, 0)
		}),
		route(http.MethodPost, spacePath+"/tasks", created, func(ctx context.Context, q keyedInSpace[CreateTaskRequest]) (*TaskResult, error) {
			key, err := idemKey(q.Key)
			if err != nil {
				return nil, err
			}
			q.Body.IdempotencyKey = key
			return s.CreateTask(ctx, q.Slug, q.Body)
		}),
		route(http.MethodGet, spacePath+"/tasks", ok, func(ctx context.Context, q taskListParams) (*TaskPage, error) {
			limit, err := domain.IntParam("limit", q.Limit, 1, MaxPage)
			if err != nil {
				return nil, err
			}
			incl, err := boolParam("include_superseded", q.IncludeSuperseded)
			if err != nil {
				return nil, err
			}
			return s.ListTasks(ctx, q.Slug, ListRequest{Status: q.Status, IncludeSuperseded: incl, After: q.After, Limit: limit}, q.Consistency)
		}),
		route(http.MethodGet, taskPath, ok, func(ctx context.Context, q taskRead) (*TaskResult, error) {
			id, err := taskID(q.ID)
			if err != nil {
				return nil, err
			}
			return s.GetTask(ctx, q.Slug, id, q.Consistency)
		}),
		taskRoute("/transition", s.Transition),
		taskRoute("/supersede", s.Supersede),
		taskRoute("/hold", s.Hold),
		route(http.MethodPost, taskPath+"/notes", created, func(ctx context.Context, q keyedOnTask[NoteRequest]) (*NoteResult, error) {
			id, err := taskID(q.ID)
			if err != nil {
				return nil, err
			}
			if q.Body.IdempotencyKey, err = idemKey(q.Key); err != nil {
				return nil, err
			}
			return s.PostNote(ctx, q.Slug, id, q.Body)
		}),
		route(http.MethodGet, taskPath+"/notes", ok, func(ctx context.Context, q notesParams) (*NotePage, error) {
			id, err := taskID(q.ID)
			if err != nil {
				return nil, err
			}
			limit, err := domain.IntParam("limit", q.Limit, 1, MaxPage)
			if err != nil {
				return nil, err
			}
			return s.ListNotes(ctx, q.Slug, id, q.After, limit, q.Consistency)
		}),
		route(http.MethodPost, spacePath+"/windows", ok, func(ctx context.Context, q keyedInSpace[WindowRequest]) (*WindowResult, error) {
			key, err := idemKey(q.Key)
			if err != nil {
				return nil, err
			}
			q.Body.IdempotencyKey = key
			return s.Window(ctx, q.Slug, q.Body)
		}),
		route(http.MethodPost, spacePath+"/reservations", created, func(ctx context.Context, q inSpace[ReserveRequest]) (*ReservationResult, error) {
			return s.Reserve(ctx, q.Slug, q.Body)
		}),
		route(http.MethodPost, reservationPath+"/commit", ok, func(ctx context.Context, q onReservation[CommitRequest]) (*Occupancy, error) {
			return s.Commit(ctx, q.Slug, q.ProposalID, q.Body)
		}),
		// abort and release take no body, an empty one or {}.
		route(http.MethodPost, reservationPath+"/abort", ok, func(ctx context.Context, q reservationRef) (*AbortResult, error) {
			return s.Abort(ctx, q.Slug, q.ProposalID)
		}),
		route(http.MethodPost, reservationPath+"/release", ok, func(ctx context.Context, q reservationRef) (*AbortResult, error) {
			return s.Release(ctx, q.Slug, q.ProposalID)
		}),
	}
}

// taskRoute is a POST on .../tasks/{id}<suffix> taking a JSON request.
func taskRoute[Req any](suffix string, call func(context.Context, string, uint64, Req) (*TaskResult, error)) domain.Route {
	return route(http.MethodPost, taskPath+suffix, http.StatusOK, func(ctx context.Context, q onTask[Req]) (*TaskResult, error) {
		id, err := taskID(q.ID)
		if err != nil {
			return nil, err
		}
		return call(ctx, q.Slug, id, q.Body)
	})
}

// spacePageRoute is a GET on /v1/spaces/{slug}<suffix>?after=&limit=
// answering a page.
func spacePageRoute[Page any](suffix string, list func(context.Context, string, string, int, fsm.Consistency) (*Page, error)) domain.Route {
	return route(http.MethodGet, spacePath+suffix, http.StatusOK, func(ctx context.Context, q spacePageParams) (*Page, error) {
		limit, err := q.limit()
		if err != nil {
			return nil, err
		}
		return list(ctx, q.Slug, q.After, limit, q.Consistency)
	})
}

func boolParam(name, v string) (bool, error) {
	switch v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, invalidf("%s must be true or false, not %q", name, clip(v))
	}
}
