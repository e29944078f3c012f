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
		CodeTooLarge: 413, CodeCursorExpired: 410, CodeMethodNotAllowed: 405}
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

// A domain registers its own decision codes: a registered code is known
// and maps to the status it was registered with (Decision.Err makes its
// error); a code nobody registered stays unknown (500, and a decision
// naming it is internal); the same code and status again is accepted;
// a shared code, a registered code with another status, a malformed code
// and a status that is not an error are refused.
func TestDomainRegistersItsCodes(t *testing.T) {
	const mine Code = "errs_test_teapot"
	if Known(mine) {
		t.Fatalf("%s is known before anyone registered it", mine)
	}
	if got := MustRegister(mine, http.StatusTeapot); got != mine {
		t.Fatalf("MustRegister returned %q", got)
	}
	if !Known(mine) || Status(mine) != http.StatusTeapot {
		t.Fatalf("registered %s: Known %v, Status %d, want true, %d", mine, Known(mine), Status(mine), http.StatusTeapot)
	}
	if err := Decision(mine).Err("brewing"); CodeOf(err) != mine {
		t.Fatalf("the registered decision's error has code %q", CodeOf(err))
	}
	if err := Register(mine, http.StatusTeapot); err != nil {
		t.Fatalf("the same registration again: %v", err)
	}
	const stranger Code = "errs_test_never_registered"
	if Known(stranger) || Status(stranger) != http.StatusInternalServerError {
		t.Fatalf("an unregistered code is known (%v) or maps to %d", Known(stranger), Status(stranger))
	}
	if err := Decision(stranger).Err("x"); CodeOf(err) != CodeInternal {
		t.Fatalf("an unregistered decision gives code %q, want internal", CodeOf(err))
	}
	for _, bad := range []struct {
		code   Code
		status int
	}{
		{mine, http.StatusConflict},         // another status
		{CodeConflict, http.StatusConflict}, // shared
		{"", http.StatusConflict},           // empty
		{"Has-Caps", http.StatusConflict},   // malformed
		{"errs_test_ok", http.StatusOK},     // not an error status
		{"errs_test_big", 600},              // no HTTP status
	} {
		if err := Register(bad.code, bad.status); err == nil {
			t.Errorf("Register(%q, %d) accepted", bad.code, bad.status)
		}
	}
	if Known("errs_test_ok") || Known("errs_test_big") || Status(mine) != http.StatusTeapot || Status(CodeConflict) != http.StatusConflict {
		t.Fatal("a refused registration changed the set")
	}
}

// A command that succeeded passes AdviseRetry on every write: that
// costs no allocation (issue 42).
func TestAdviseRetryOfNoErrorAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() {
		if AdviseRetry(nil, "k") != nil {
			t.Fatal("changed")
		}
	}); n != 0 {
		t.Fatalf("%v allocations a call, want 0", n)
	}
}
