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
	route := func(method, path string, fn handler) domain.Route {
		return domain.Route{Method: method, Path: path, Access: domain.Authenticated, Handler: serve(fn)}
	}
	slug := func(r *http.Request) string { return r.PathValue("slug") }
	return []domain.Route{
		route(http.MethodPut, spacePath, func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			var req PutSpaceRequest
			if err := decode(w, r, &req); err != nil {
				return 0, nil, err
			}
			res, err := s.PutSpace(r.Context(), slug(r), req)
			return http.StatusOK, res, err
		}),
		route(http.MethodGet, spacePath, func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			_, cons, err := params(r)
			if err != nil {
				return 0, nil, err
			}
			res, err := s.GetSpace(r.Context(), slug(r), cons)
			return http.StatusOK, res, err
		}),
		route(http.MethodGet, spacesPath, func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			after, limit, cons, err := pageParams(r)
			if err != nil {
				return 0, nil, err
			}
			res, err := s.ListSpaces(r.Context(), after, limit, cons)
			return http.StatusOK, res, err
		}),
		spacePageRoute(route, "/reservations", func(ctx context.Context, slug, after string, limit int, cons fsm.Consistency) (any, error) {
			return s.ListReservations(ctx, slug, after, limit, cons)
		}),
		spacePageRoute(route, "/occupancy", func(ctx context.Context, slug, after string, limit int, cons fsm.Consistency) (any, error) {
			return s.ListOccupancy(ctx, slug, after, limit, cons)
		}),
		spacePageRoute(route, "/duplicates", func(ctx context.Context, slug, after string, limit int, cons fsm.Consistency) (any, error) {
			return s.ListDuplicates(ctx, slug, after, limit, cons)
		}),
		route(http.MethodPost, spacePath+"/bind", func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			var req BindRequest
			if err := decode(w, r, &req); err != nil {
				return 0, nil, err
			}
			res, err := s.Bind(r.Context(), slug(r), req, 0)
			return http.StatusOK, res, err
		}),
		route(http.MethodPost, spacePath+"/tasks", func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			var req CreateTaskRequest
			if err := decode(w, r, &req); err != nil {
				return 0, nil, err
			}
			key, err := idemKey(r)
			if err != nil {
				return 0, nil, err
			}
			req.IdempotencyKey = key
			res, err := s.CreateTask(r.Context(), slug(r), req)
			return created, res, err
		}),
		route(http.MethodGet, spacePath+"/tasks", func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			p, cons, err := params(r, "status", "after", "limit", "include_superseded")
			if err != nil {
				return 0, nil, err
			}
			limit, err := p.Int("limit", 1, MaxPage)
			if err != nil {
				return 0, nil, err
			}
			incl, err := boolParam(p, "include_superseded")
			if err != nil {
				return 0, nil, err
			}
			res, err := s.ListTasks(r.Context(), slug(r), ListRequest{Status: p.String("status"), IncludeSuperseded: incl, After: p.String("after"), Limit: limit}, cons)
			return http.StatusOK, res, err
		}),
		route(http.MethodGet, taskPath, func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			_, cons, err := params(r)
			if err != nil {
				return 0, nil, err
			}
			id, err := taskID(r)
			if err != nil {
				return 0, nil, err
			}
			res, err := s.GetTask(r.Context(), slug(r), id, cons)
			return http.StatusOK, res, err
		}),
		taskRoute(route, "/transition", func(ctx context.Context, slug string, id uint64, req TransitionRequest) (any, error) {
			return s.Transition(ctx, slug, id, req)
		}),
		taskRoute(route, "/supersede", func(ctx context.Context, slug string, id uint64, req SupersedeRequest) (any, error) {
			return s.Supersede(ctx, slug, id, req)
		}),
		taskRoute(route, "/hold", func(ctx context.Context, slug string, id uint64, req HoldRequest) (any, error) {
			return s.Hold(ctx, slug, id, req)
		}),
		route(http.MethodPost, taskPath+"/notes", func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			var req NoteRequest
			if err := decode(w, r, &req); err != nil {
				return 0, nil, err
			}
			id, err := taskID(r)
			if err != nil {
				return 0, nil, err
			}
			if req.IdempotencyKey, err = idemKey(r); err != nil {
				return 0, nil, err
			}
			res, err := s.PostNote(r.Context(), slug(r), id, req)
			return created, res, err
		}),
		route(http.MethodGet, taskPath+"/notes", func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			p, cons, err := params(r, "after", "limit")
			if err != nil {
				return 0, nil, err
			}
			id, err := taskID(r)
			if err != nil {
				return 0, nil, err
			}
			limit, err := p.Int("limit", 1, MaxPage)
			if err != nil {
				return 0, nil, err
			}
			res, err := s.ListNotes(r.Context(), slug(r), id, p.String("after"), limit, cons)
			return http.StatusOK, res, err
		}),
		route(http.MethodPost, spacePath+"/windows", func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			var req WindowRequest
			if err := decode(w, r, &req); err != nil {
				return 0, nil, err
			}
			key, err := idemKey(r)
			if err != nil {
				return 0, nil, err
			}
			req.IdempotencyKey = key
			res, err := s.Window(r.Context(), slug(r), req)
			return http.StatusOK, res, err
		}),
		route(http.MethodPost, spacePath+"/reservations", func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			var req ReserveRequest
			if err := decode(w, r, &req); err != nil {
				return 0, nil, err
			}
			res, err := s.Reserve(r.Context(), slug(r), req)
			return created, res, err
		}),
		route(http.MethodPost, reservationPath+"/commit", func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			var req CommitRequest
			if err := decode(w, r, &req); err != nil {
				return 0, nil, err
			}
			res, err := s.Commit(r.Context(), slug(r), r.PathValue("proposal_id"), req)
			return http.StatusOK, res, err
		}),
		route(http.MethodPost, reservationPath+"/abort", func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			if err := emptyBody(w, r); err != nil {
				return 0, nil, err
			}
			res, err := s.Abort(r.Context(), slug(r), r.PathValue("proposal_id"))
			return http.StatusOK, res, err
		}),
		route(http.MethodPost, reservationPath+"/release", func(w http.ResponseWriter, r *http.Request) (int, any, error) {
			if err := emptyBody(w, r); err != nil {
				return 0, nil, err
			}
			res, err := s.Release(r.Context(), slug(r), r.PathValue("proposal_id"))
			return http.StatusOK, res, err
		}),
	}
}

// taskRoute is a POST on .../tasks/{id}<suffix> taking a JSON request.
func taskRoute[Req any](route func(string, string, handler) domain.Route, suffix string, call func(context.Context, string, uint64, Req) (any, error)) domain.Route {
	return route(http.MethodPost, taskPath+suffix, func(w http.ResponseWriter, r *http.Request) (int, any, error) {
		var req Req
		if err := decode(w, r, &req); err != nil {
			return 0, nil, err
		}
		id, err := taskID(r)
		if err != nil {
			return 0, nil, err
		}
		res, err := call(r.Context(), r.PathValue("slug"), id, req)
		return http.StatusOK, res, err
	})
}

// spacePageRoute is a GET on /v1/spaces/{slug}<suffix>?after=&limit=
// answering a page.
func spacePageRoute(route func(string, string, handler) domain.Route, suffix string, list func(context.Context, string, string, int, fsm.Consistency) (any, error)) domain.Route {
	return route(http.MethodGet, spacePath+suffix, func(w http.ResponseWriter, r *http.Request) (int, any, error) {
		after, limit, cons, err := pageParams(r)
		if err != nil {
			return 0, nil, err
		}
		res, err := list(r.Context(), r.PathValue("slug"), after, limit, cons)
		return http.StatusOK, res, err
	})
}

// pageParams parses ?after=&limit=&consistency= (limit 1..128; absent:
// 128).
func pageParams(r *http.Request) (string, int, fsm.Consistency, error) {
	p, cons, err := params(r, "after", "limit")
	if err != nil {
		return "", 0, 0, err
	}
	limit, err := p.Int("limit", 1, MaxPage)
	return p.String("after"), limit, cons, err
}

// emptyBody accepts no body, an empty one or {}.
func emptyBody(w http.ResponseWriter, r *http.Request) error {
	body, err := domain.ReadBody(w, r, domain.MaxBodyBytes)
	if err != nil || len(body) == 0 {
		return err
	}
	var v struct{}
	return decodeBytes(body, &v)
}

func boolParam(p domain.Params, name string) (bool, error) {
	switch v := p.String(name); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, invalidf("%s must be true or false, not %q", name, clip(v))
	}
}
