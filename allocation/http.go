package allocation

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strconv"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
)

// The HTTP side of the routes: every route is a domain.Endpoint whose
// failures go through flatConflict (the spec's flat 409 body for a
// *Conflict, the standard envelope for everything else), and whose
// requests bind the path values, the Idempotency-Key header and the
// query parameters below.

// route is an allocation route for any authenticated principal (the
// module checks tenant and role), answering status on success.
func route[Req, Res any](method, path string, status int, call func(context.Context, Req) (*Res, error)) domain.Route {
	e := domain.Endpoint[Req, Res]{Method: method, Path: path, Access: domain.Authenticated, Call: call, Errors: flatConflict}
	if status != http.StatusOK {
		e.Status, e.Statuses = func(*Res) int { return status }, []int{status}
	}
	return e.Route()
}

// flatConflict answers a *Conflict with the spec's flat 409 body
// (allocation-window-conflict-keys section 4) instead of the envelope.
var flatConflict = &domain.ErrorEncoder{
	Encode: func(w http.ResponseWriter, _ any, err error) bool {
		var c *Conflict
		if !errors.As(err, &c) {
			return false
		}
		domain.WriteJSON(w, http.StatusConflict, c)
		return true
	},
	Bodies: map[int]reflect.Type{http.StatusConflict: reflect.TypeFor[Conflict]()},
}

// The requests of the routes: path values, the Idempotency-Key header,
// query parameters and the JSON body (see domain.Endpoint).
type (
	inSpace[B any] struct {
		Slug string `path:"slug"`
		Body B      `body:""`
	}
	keyedInSpace[B any] struct {
		Slug string   `path:"slug"`
		Key  []string `header:"Idempotency-Key"`
		Body B        `body:""`
	}
	onTask[B any] struct {
		Slug string `path:"slug"`
		ID   string `path:"id" type:"integer"`
		Body B      `body:""`
	}
	keyedOnTask[B any] struct {
		Slug string   `path:"slug"`
		ID   string   `path:"id" type:"integer"`
		Key  []string `header:"Idempotency-Key"`
		Body B        `body:""`
	}
	onReservation[B any] struct {
		Slug       string `path:"slug"`
		ProposalID string `path:"proposal_id"`
		Body       B      `body:""`
	}
	reservationRef struct {
		Slug       string `path:"slug"`
		ProposalID string `path:"proposal_id"`
	}
	spaceRead struct {
		Slug        string          `path:"slug"`
		Consistency fsm.Consistency `query:"consistency"`
	}
	taskRead struct {
		Slug        string          `path:"slug"`
		ID          string          `path:"id" type:"integer"`
		Consistency fsm.Consistency `query:"consistency"`
	}
	pageParams struct {
		After       string          `query:"after"`
		Limit       string          `query:"limit" type:"integer"`
		Consistency fsm.Consistency `query:"consistency"`
	}
	spacePageParams struct {
		Slug        string          `path:"slug"`
		After       string          `query:"after"`
		Limit       string          `query:"limit" type:"integer"`
		Consistency fsm.Consistency `query:"consistency"`
	}
	taskListParams struct {
		Slug              string          `path:"slug"`
		Status            string          `query:"status"`
		After             string          `query:"after"`
		Limit             string          `query:"limit" type:"integer"`
		IncludeSuperseded string          `query:"include_superseded" type:"boolean"`
		Consistency       fsm.Consistency `query:"consistency"`
	}
	notesParams struct {
		Slug        string          `path:"slug"`
		ID          string          `path:"id" type:"integer"`
		After       string          `query:"after"`
		Limit       string          `query:"limit" type:"integer"`
		Consistency fsm.Consistency `query:"consistency"`
	}
)

// limit parses ?limit= (1..128; absent: 0, which the service reads as
// 128).
func (q pageParams) limit() (int, error) { return domain.IntParam("limit", q.Limit, 1, MaxPage) }

func (q spacePageParams) limit() (int, error) { return domain.IntParam("limit", q.Limit, 1, MaxPage) }

// taskID parses the {id} path value.
func taskID(v string) (uint64, error) {
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil || id == 0 {
		return 0, errs.Errorf(errs.CodeInvalid, "task id %q: want a positive integer", clip(v))
	}
	return id, nil
}

// idemKey is the Idempotency-Key header (at most once), given its values.
func idemKey(vs []string) (string, error) {
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		if vs[0] == "" {
			return "", errs.New(errs.CodeInvalid, "Idempotency-Key is empty")
		}
		return vs[0], checkIdemKey(vs[0])
	}
	return "", errs.New(errs.CodeInvalid, "Idempotency-Key given more than once")
}

// invalidf is an invalid (422) error.
func invalidf(format string, args ...any) error {
	return errs.Errorf(errs.CodeInvalid, format, args...)
}
