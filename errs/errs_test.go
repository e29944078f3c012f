package errs

import (
	"errors"
	"fmt"
	"net/http"
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
