package errs

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
)

// Code names one kind of failure. The set is closed: the shared codes
// below, plus the decision codes domains register (Register). Known
// reports whether a code belongs to it, and decoders turn unknown codes
// into Internal.
type Code string

// The shared codes, used by every module and by the host.
const (
	CodeInvalid             Code = "invalid"
	CodeNotFound            Code = "not_found"
	CodeConflict            Code = "conflict"
	CodeIdempotencyConflict Code = "idempotency_conflict"
	CodeStaleFence          Code = "stale_fence"
	CodeStaleEpoch          Code = "stale_epoch"
	CodeExpired             Code = "expired"
	CodeExhausted           Code = "exhausted"
	CodeBackpressure        Code = "backpressure"
	CodeUnavailable         Code = "unavailable"
	CodeUnauthorized        Code = "unauthorized"
	CodeForbidden           Code = "forbidden"
	CodeInternal            Code = "internal"
	CodeCursorExpired       Code = "cursor_expired"
	CodeTooLarge            Code = "too_large"
	// CodeMethodNotAllowed: the path names a route, but not with this
	// method (the answer's Allow header lists the methods it takes).
	CodeMethodNotAllowed Code = "method_not_allowed"
)

// sharedStatus is the HTTP status of each shared code.
var sharedStatus = map[Code]int{
	CodeInvalid:             http.StatusUnprocessableEntity,
	CodeNotFound:            http.StatusNotFound,
	CodeConflict:            http.StatusConflict,
	CodeIdempotencyConflict: http.StatusConflict,
	CodeStaleFence:          http.StatusConflict,
	CodeStaleEpoch:          http.StatusConflict,
	CodeExpired:             http.StatusConflict,
	CodeExhausted:           http.StatusConflict,
	CodeBackpressure:        http.StatusTooManyRequests,
	CodeUnavailable:         http.StatusServiceUnavailable,
	CodeUnauthorized:        http.StatusUnauthorized,
	CodeForbidden:           http.StatusForbidden,
	CodeInternal:            http.StatusInternalServerError,
	CodeCursorExpired:       http.StatusGone,
	CodeTooLarge:            http.StatusRequestEntityTooLarge,
	CodeMethodNotAllowed:    http.StatusMethodNotAllowed,
}

// The domains' codes: written only by Register (in practice while
// packages initialize), read by Known and Status on every answer. A
// registration copies the map and publishes the copy, so readers take no
// lock; regMu orders registrations.
var (
	regMu      sync.Mutex
	registered atomic.Pointer[map[Code]int]
)

// Register adds a domain's decision code (one its spec names, such as
// projection's stale_watermark) to the set, with the HTTP status an
// error of that code answers. A domain registers its codes in a
// package-level var (MustRegister), so that they are known once its
// package is linked, before anything runs. The code must be 1-32
// lowercase letters, digits or '_' starting with a letter, not a shared
// code, and status a 4xx or 5xx status. A code registered again with the
// same status is accepted (a client that links no domain registers the
// codes it decodes, as the domain does); with another status it is
// refused, so two packages that disagree about a code's status cannot
// both be linked into one program.
func Register(c Code, status int) error {
	if !wellFormed(c) {
		return fmt.Errorf("errs: code %q: want 1-32 lowercase letters, digits or '_', starting with a letter", c)
	}
	if status < 400 || status > 599 {
		return fmt.Errorf("errs: code %q: status %d is not an HTTP error status", c, status)
	}
	if _, shared := sharedStatus[c]; shared {
		return fmt.Errorf("errs: code %q is a shared code", c)
	}
	regMu.Lock()
	defer regMu.Unlock()
	old := registered.Load()
	next := map[Code]int{c: status}
	if old != nil {
		if prev, dup := (*old)[c]; dup {
			if prev == status {
				return nil // the same contract, registered again (see above)
			}
			return fmt.Errorf("errs: code %q registered with status %d, now with %d", c, prev, status)
		}
		for k, v := range *old { // order-free: copies into a map
			next[k] = v
		}
	}
	registered.Store(&next)
	return nil
}

// MustRegister is Register for a package-level var: it returns c, and
// panics (while the program initializes) if Register refuses it.
func MustRegister(c Code, status int) Code {
	if err := Register(c, status); err != nil {
		panic(err)
	}
	return c
}

func wellFormed(c Code) bool {
	if len(c) == 0 || len(c) > 32 || c[0] < 'a' || c[0] > 'z' {
		return false
	}
	for _, r := range c {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// status is c's HTTP status, ok false for a code of neither group.
func status(c Code) (int, bool) {
	if s, ok := sharedStatus[c]; ok {
		return s, true
	}
	if m := registered.Load(); m != nil {
		s, ok := (*m)[c]
		return s, ok
	}
	return 0, false
}

// Known reports whether c is a shared code or a registered one.
func Known(c Code) bool {
	_, ok := status(c)
	return ok
}

// Status is the HTTP status for a code; unknown codes are 500.
func Status(c Code) int {
	if s, ok := status(c); ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is the one error type of Arbiter. Message is for people; Code is for
// programs. Detail optionally carries structured, non-secret context (for
// example the winner of a conflict) as JSON-compatible values.
type Error struct {
	Code    Code           `json:"code" msgpack:"c"`
	Message string         `json:"message" msgpack:"m"`
	Detail  map[string]any `json:"detail,omitempty" msgpack:"d,omitempty"`
	// OutcomeUnknown marks an unavailable error after which the command may
	// or may not have been applied (a timeout or a lost leadership after the
	// command reached the log). Retry with the same idempotency key.
	OutcomeUnknown bool `json:"outcome_unknown,omitempty" msgpack:"u,omitempty"`
}

func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Is makes every *Error with the same code match, so sentinels work with
// errors.Is across the wire.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is. Never return them directly when a message would
// help; use New or Errorf, which match them all the same.
var (
	Invalid             = &Error{Code: CodeInvalid}
	NotFound            = &Error{Code: CodeNotFound}
	Conflict            = &Error{Code: CodeConflict}
	IdempotencyConflict = &Error{Code: CodeIdempotencyConflict}
	StaleFence          = &Error{Code: CodeStaleFence}
	StaleEpoch          = &Error{Code: CodeStaleEpoch}
	Expired             = &Error{Code: CodeExpired}
	Exhausted           = &Error{Code: CodeExhausted}
	Backpressure        = &Error{Code: CodeBackpressure}
	Unavailable         = &Error{Code: CodeUnavailable}
	Unauthorized        = &Error{Code: CodeUnauthorized}
	Forbidden           = &Error{Code: CodeForbidden}
	Internal            = &Error{Code: CodeInternal}
	CursorExpired       = &Error{Code: CodeCursorExpired}
	TooLarge            = &Error{Code: CodeTooLarge}
	MethodNotAllowed    = &Error{Code: CodeMethodNotAllowed}
)

// New returns an error with a code and a fixed message.
func New(c Code, msg string) *Error { return &Error{Code: c, Message: msg} }

// Errorf returns an error with a code and a formatted message.
func Errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// Coded is an error of a domain's own type that belongs to one code of
// the closed set: allocation's flat conflict body, which the spec fixes,
// is one. From, CodeOf and Status see its code, and it should match the
// code's sentinel with errors.Is (MatchesCode does that), so that the
// three never disagree.
type Coded interface {
	error
	ErrCode() Code
}

// MatchesCode is the Is method of a Coded error: target is the sentinel
// (or any *Error) of code c.
func MatchesCode(target error, c Code) bool {
	t, ok := target.(*Error)
	return ok && t.Code == c
}

// From returns err as an *Error: itself when it is one (or wraps one), an
// *Error of its code and text when it is Coded, else an Internal error
// with err's text. nil stays nil.
func From(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e // nil for a typed nil *Error, which is no error
	}
	var c Coded
	if errors.As(err, &c) {
		return &Error{Code: c.ErrCode(), Message: err.Error()}
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}

// Unknown returns an unavailable error whose outcome is unknown.
func Unknown(format string, args ...any) *Error {
	e := Errorf(CodeUnavailable, format, args...)
	e.OutcomeUnknown = true
	return e
}

// IsOutcomeUnknown reports whether err says a command may or may not have
// been applied.
func IsOutcomeUnknown(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.OutcomeUnknown
}

// CodeOf is the code of err, or "" for nil.
func CodeOf(err error) Code {
	if e := From(err); e != nil {
		return e.Code
	}
	return ""
}

// Decision is a domain command's verdict as its result carries it: a
// success word the domain names (Granted) or the code of the refusal.
// Decisions and codes are one vocabulary, so a refusal becomes its error
// without a table, and a client reads the same word in the result and in
// the error.
type Decision string

// Granted is the success decision.
const Granted Decision = "granted"

// Err is nil for a success (Granted or any of ok) and otherwise the
// decision's error, with msg and Detail["decision"]. A word that is not
// a code is an internal error: a domain returned a verdict it never
// declared.
func (d Decision) Err(msg string, ok ...Decision) error {
	if d == Granted {
		return nil
	}
	for _, o := range ok {
		if d == o {
			return nil
		}
	}
	if !Known(Code(d)) {
		return Errorf(CodeInternal, "unknown decision %q", d)
	}
	e := New(Code(d), msg)
	e.Detail = map[string]any{"decision": string(d)}
	return e
}

// AdviseRetry adds to an error whose outcome is unknown how to learn it:
// the message says to retry with key, and detail.idempotency_key holds it
// (a command without a key says instead that a retry may apply it twice).
// Any other error, and one already advised, is returned as it is.
func AdviseRetry(err error, key string) error {
	if err == nil {
		// Every write that succeeded passes here: without this, the
		// target of errors.As below costs it an allocation (issue 42).
		return nil
	}
	var e *Error
	if !errors.As(err, &e) || !e.OutcomeUnknown {
		return err
	}
	if _, done := e.Detail["idempotency_key"]; done {
		return err
	}
	n := *e
	n.Detail = make(map[string]any, len(e.Detail)+1)
	for k, v := range e.Detail {
		n.Detail[k] = v
	}
	if key == "" {
		n.Message += "; the command carried no idempotency key, so a retry may apply it twice"
		n.Detail["idempotency_key"] = ""
		return &n
	}
	n.Message += fmt.Sprintf("; retry with the same idempotency key %q to learn the outcome", key)
	n.Detail["idempotency_key"] = key
	return &n
}
