package allocation

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/fsm"
	"github.com/arbiterhq/arbiter/internal/strictjson"
)

// The HTTP adapter of the routes: path values, the Idempotency-Key
// header, and the two kinds of error body (the spec's flat 409 for a
// *Conflict, the standard envelope for everything else).

// handler is a route's work: the status and body of a success, or an
// error.
type handler func(w http.ResponseWriter, r *http.Request) (int, any, error)

func serve(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, body, err := h(w, r)
		var c *Conflict
		switch {
		case errors.As(err, &c):
			domain.WriteJSON(w, http.StatusConflict, c)
		case err != nil:
			domain.WriteError(w, err)
		default:
			domain.WriteJSON(w, status, body)
		}
	})
}

// decode reads the JSON body strictly into v.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	return domain.DecodeJSON(w, r, v)
}

// taskID is the {id} path value.
func taskID(r *http.Request) (uint64, error) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil || id == 0 {
		return 0, errs.Errorf(errs.CodeInvalid, "task id %q: want a positive integer", clip(r.PathValue("id")))
	}
	return id, nil
}

// idemKey is the Idempotency-Key header (at most once).
func idemKey(r *http.Request) (string, error) {
	vs := r.Header.Values("Idempotency-Key")
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

// params parses a GET's query, with consistency allowed.
func params(r *http.Request, names ...string) (domain.Params, fsm.Consistency, error) {
	p, err := domain.ParseParams(r, append(names, "consistency")...)
	if err != nil {
		return p, 0, err
	}
	cons, err := p.Consistency()
	return p, cons, err
}

// created is 201 for a create that made (or replays) its object.
const created = http.StatusCreated

func decodeBytes(b []byte, v any) error {
	if err := strictjson.Decode(b, v); err != nil {
		return errs.Errorf(errs.CodeInvalid, "malformed JSON body: %v", err)
	}
	return nil
}

// invalidf is an invalid (422) error.
func invalidf(format string, args ...any) error {
	return errs.Errorf(errs.CodeInvalid, format, args...)
}
