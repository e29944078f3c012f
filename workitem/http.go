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

// submitRoute is an admission route: a body of at most MaxRequestBytes
// (413 too_large beyond), decoded strictly (unknown fields, invalid UTF-8
// or trailing data: 422 invalid naming the field when it can), answered
// 201 when it admitted and 200 when it replayed.
func submitRoute[Req, Res any](path string, call func(context.Context, Req) (*Res, error), replayed func(*Res) bool) domain.Route {
	return domain.Endpoint[Req, Res]{Method: http.MethodPost, Path: path, Access: domain.Authenticated, Call: call,
		MaxBody: MaxRequestBytes, DecodeError: decodeError, Statuses: []int{http.StatusCreated, http.StatusOK},
		Status: func(res *Res) int {
			if replayed(res) {
				return http.StatusOK
			}
			return http.StatusCreated
		}}.Route()
}

// post is a POST route for any authenticated principal (the module checks
// tenant and role): a body of at most domain.MaxBodyBytes (413 beyond),
// decoded as submitRoute decodes, answered 200.
func post[Req, Res any](path string, call func(context.Context, Req) (*Res, error)) domain.Route {
	return domain.Endpoint[Req, Res]{Method: http.MethodPost, Path: path, Access: domain.Authenticated, Call: call, DecodeError: decodeError}.Route()
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
