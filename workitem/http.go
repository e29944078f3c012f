package workitem

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/arbiterhq/arbiter/domain"
	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/strictjson"
)

// submitHandler serves an admission route: a body of at most
// MaxRequestBytes (413 too_large beyond), decoded strictly (unknown
// fields, invalid UTF-8 or trailing data: 422 invalid naming the field
// when it can), answered 201 when it admitted and 200 when it replayed.
func submitHandler[Req, Res any](call func(context.Context, Req) (*Res, error), replayed func(*Res) bool) http.Handler {
	return bodyHandler(MaxRequestBytes, call, func(res *Res) int {
		if replayed(res) {
			return http.StatusOK
		}
		return http.StatusCreated
	})
}

// jsonHandler serves every other route with a body: at most
// domain.MaxBodyBytes (413 beyond), decoded as submitHandler decodes,
// answered with status(res) (nil: 200).
func jsonHandler[Req, Res any](call func(context.Context, Req) (*Res, error), status func(*Res) int) http.Handler {
	return bodyHandler(domain.MaxBodyBytes, call, status)
}

// bodyHandler reads a body of at most limit bytes, decodes it strictly
// (422 naming the field when the decoder names one), calls call and
// answers its result with status(res) (nil: 200).
func bodyHandler[Req, Res any](limit int64, call func(context.Context, Req) (*Res, error), status func(*Res) int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := domain.ReadBody(w, r, limit)
		if err != nil {
			domain.WriteError(w, err)
			return
		}
		var req Req
		if err := strictjson.Decode(body, &req); err != nil {
			domain.WriteError(w, decodeError(err))
			return
		}
		res, err := call(r.Context(), req)
		if err != nil {
			domain.WriteError(w, err)
			return
		}
		code := http.StatusOK
		if status != nil {
			code = status(res)
		}
		domain.WriteJSON(w, code, res)
	})
}

// post is a POST route of jsonHandler for any authenticated principal
// (the module checks tenant and role).
func post[Req, Res any](path string, call func(context.Context, Req) (*Res, error), status func(*Res) int) domain.Route {
	return domain.Route{Method: http.MethodPost, Path: path, Access: domain.Authenticated, Handler: jsonHandler(call, status)}
}

// decodeError is the invalid error of a body that does not decode, with
// detail.field when the decoder names one.
func decodeError(err error) error {
	var fe *strictjson.FieldError
	switch {
	case errors.As(err, &fe) && fe.Unknown:
		return fieldErr(fe.Field, "is not a field of this request (tenant, agent and scopes come from the credential)")
	case errors.As(err, &fe):
		return fieldErr(fe.Field, "%s", strings.TrimPrefix(fe.Error(), fe.Field+": "))
	}
	return errs.Errorf(errs.CodeInvalid, "malformed JSON body: %v", err)
}
