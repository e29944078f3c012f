package errs

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestIsMatchesByCode(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", Errorf(CodeConflict, "id %s taken", "x"))
	if !errors.Is(err, Conflict) || errors.Is(err, NotFound) {
		t.Fatal("errors.Is does not match by code")
	}
	if CodeOf(err) != CodeConflict || CodeOf(nil) != "" || CodeOf(errors.New("plain")) != CodeInternal {
		t.Fatal("CodeOf")
	}
	var typedNil *Error
	if From(typedNil) != nil || CodeOf(typedNil) != "" {
		t.Fatal("a typed nil *Error is not an error")
	}
}

func TestStatusMapIsClosed(t *testing.T) {
	want := map[Code]int{CodeInvalid: 422, CodeNotFound: 404, CodeConflict: 409, CodeIdempotencyConflict: 409,
		CodeUnavailable: 503, CodeBackpressure: 429, CodeUnauthorized: 401, CodeForbidden: 403, CodeInternal: 500,
		CodeTooLarge: 413, CodeCursorExpired: 410, CodeStaleWatermark: 409, CodeMethodNotAllowed: 405}
	for c, s := range want {
		if Status(c) != s {
			t.Errorf("Status(%s) = %d, want %d", c, Status(c), s)
		}
	}
	if Known("bogus") || Status("bogus") != http.StatusInternalServerError {
		t.Error("unknown codes must be unknown and map to 500")
	}
}

func TestOutcomeUnknown(t *testing.T) {
	if !IsOutcomeUnknown(fmt.Errorf("x: %w", Unknown("lost"))) || IsOutcomeUnknown(Unavailable) || !errors.Is(Unknown("x"), Unavailable) {
		t.Fatal("outcome-unknown errors")
	}
}

// domainConflict is a domain's own error type, as allocation's flat
// conflict body is.
type domainConflict struct{ winner string }

func (d *domainConflict) Error() string        { return "taken by " + d.winner }
func (d *domainConflict) ErrCode() Code        { return CodeConflict }
func (d *domainConflict) Is(target error) bool { return MatchesCode(target, d.ErrCode()) }

// A Coded error answers the same through errors.Is, CodeOf and Status,
// also when wrapped.
func TestCodedAgrees(t *testing.T) {
	for _, err := range []error{&domainConflict{"t1"}, fmt.Errorf("create: %w", &domainConflict{"t2"})} {
		if !errors.Is(err, Conflict) || errors.Is(err, Invalid) {
			t.Errorf("%v: errors.Is disagrees", err)
		}
		if c := CodeOf(err); c != CodeConflict || Status(c) != 409 {
			t.Errorf("%v: CodeOf %q, status %d", err, c, Status(c))
		}
		if e := From(err); e.Message != err.Error() {
			t.Errorf("From(%v) lost the message: %q", err, e.Message)
		}
	}
}

func TestAdviseRetry(t *testing.T) {
	unknown := Unknown("leadership lost")
	got := AdviseRetry(fmt.Errorf("create: %w", unknown), "req-42")
	e := From(got)
	if !IsOutcomeUnknown(got) || e.Detail["idempotency_key"] != "req-42" || !strings.Contains(e.Message, `"req-42"`) {
		t.Fatalf("advised: %#v", e)
	}
	if again := AdviseRetry(got, "other"); From(again).Message != e.Message {
		t.Errorf("advised twice: %q", From(again).Message)
	}
	if unknown.Detail != nil {
		t.Error("the original error was changed")
	}
	if m := From(AdviseRetry(Unknown("timeout"), "")).Message; !strings.Contains(m, "no idempotency key") {
		t.Errorf("no key: %q", m)
	}
	plain := Errorf(CodeConflict, "taken")
	if AdviseRetry(plain, "k") != error(plain) {
		t.Error("a known outcome was changed")
	}
}
