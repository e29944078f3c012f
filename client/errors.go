package client

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/arbiterhq/arbiter/errs"
)

// Errors: every JSON error the API answers is {"error": {"code",
// "message", "detail"?, "outcome_unknown"?}} with one HTTP status per
// code (errs.Status); decodeError turns it back into the *errs.Error the
// node raised, so that errors.Is(err, errs.Conflict), errs.CodeOf and
// errs.IsOutcomeUnknown work as they do against an embedded node.
// Allocation's conflict body is flat (the spec fixes it) and becomes an
// *AllocationConflictError, which keeps the winner.

// AllocationConflictError is allocation's 409: a conflict key held by
// another (Winner), a superseded task, a reservation in the way. It
// matches errs.Conflict with errors.Is, and errs.CodeOf says conflict.
type AllocationConflictError struct {
	AllocationConflict
	// Status is the HTTP status it came with (409).
	Status int
}

// Error says what conflicted and who holds the key, as the server's own
// error text does.
func (e *AllocationConflictError) Error() string {
	c := e.AllocationConflict
	switch {
	case c.Winner != nil && c.ConflictKey != nil:
		return fmt.Sprintf("%s: %s: %s %s holds %s/%s/%s", c.Err, c.Code, c.Winner.Type, c.Winner.ID,
			c.ConflictKey.Kind, c.ConflictKey.Target, c.ConflictKey.DeliveryMode)
	case c.SupersededBy != 0:
		return fmt.Sprintf("%s: superseded by task %d", c.Err, c.SupersededBy)
	case c.Code != "":
		return c.Err + ": " + c.Code
	}
	return c.Err
}

// ErrCode is conflict (errs.Coded).
func (e *AllocationConflictError) ErrCode() errs.Code { return errs.CodeConflict }

// Is makes errors.Is(err, errs.Conflict) hold.
func (e *AllocationConflictError) Is(target error) bool {
	return errs.MatchesCode(target, errs.CodeConflict)
}

// statusCodes is the code of an error answer without a readable body, by
// its status (the inverse of errs.Status where it is one to one).
var statusCodes = map[int]errs.Code{
	http.StatusUnprocessableEntity:   errs.CodeInvalid,
	http.StatusNotFound:              errs.CodeNotFound,
	http.StatusConflict:              errs.CodeConflict,
	http.StatusTooManyRequests:       errs.CodeBackpressure,
	http.StatusServiceUnavailable:    errs.CodeUnavailable,
	http.StatusUnauthorized:          errs.CodeUnauthorized,
	http.StatusForbidden:             errs.CodeForbidden,
	http.StatusGone:                  errs.CodeCursorExpired,
	http.StatusRequestEntityTooLarge: errs.CodeTooLarge,
	http.StatusMethodNotAllowed:      errs.CodeMethodNotAllowed,
}

// decodeError is the error of an answer with status and body.
func decodeError(status int, body []byte) error {
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &probe) == nil && len(probe.Error) > 0 {
		if probe.Error[0] == '"' { // allocation's flat conflict body
			var c AllocationConflict
			if err := json.Unmarshal(body, &c); err == nil {
				return &AllocationConflictError{AllocationConflict: c, Status: status}
			}
		}
		var e errs.Error
		if err := json.Unmarshal(probe.Error, &e); err == nil && e.Code != "" {
			if !errs.Known(e.Code) {
				e.Message = fmt.Sprintf("unknown error code %q: %s", e.Code, e.Message)
				e.Code = errs.CodeInternal
			}
			return &e
		}
	}
	if status == http.StatusBadRequest && bytes.Contains(body, []byte(plainToTLS)) {
		// The TLS server refused the request before reading it.
		return errs.New(errs.CodeUnavailable, "the node speaks HTTPS (TLS), not plain HTTP: use an https:// address (and WithCAFile, --ca, for its CA)")
	}
	code, ok := statusCodes[status]
	if !ok {
		code = errs.CodeInternal
	}
	return errs.Errorf(code, "HTTP %d without an error body", status)
}

// plainToTLS is what net/http's TLS server writes, with status 400, to a
// client that sent plain HTTP: the one sign of that mistake on the wire.
const plainToTLS = "Client sent an HTTP request to an HTTPS server."

// transportError classifies a request that got no answer: a failed dial
// never reached the node, so nothing was done (unavailable); any later
// failure leaves the outcome unknown.
func transportError(url string, err error) error {
	var op *net.OpError
	var unknownCA x509.UnknownAuthorityError
	switch {
	case errors.Is(err, http.ErrSchemeMismatch):
		return errs.Errorf(errs.CodeUnavailable, "%s: the node speaks plain HTTP, not HTTPS: use an http:// address (or start the node with TLS)", url)
	case errors.As(err, &unknownCA):
		return errs.Errorf(errs.CodeUnavailable, "%s: the node's certificate is not signed by a CA this client trusts (give the nodes' CA: WithCAFile, --ca): %v", url, err)
	case errors.As(err, &op) && op.Op == "dial":
		return errs.Errorf(errs.CodeUnavailable, "%s unreachable: %v", url, err)
	}
	return errs.Unknown("%s: %v", url, err)
}
