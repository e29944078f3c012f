package domain

import (
	"net/http/httptest"
	"testing"
)

// Every JSON answer shares one Content-Type value slice; a handler that
// adds to its header afterwards must not change it for the next answer.
func TestWriteJSONSharesAContentTypeNobodyChanges(t *testing.T) {
	first := httptest.NewRecorder()
	WriteJSON(first, 200, map[string]int{"a": 1})
	first.Header().Add("Content-Type", "text/plain")
	first.Header()["Content-Type"] = append(first.Header()["Content-Type"], "x")

	second := httptest.NewRecorder()
	WriteJSON(second, 200, map[string]int{"a": 1})
	if got := second.Header()["Content-Type"]; len(got) != 1 || got[0] != "application/json" {
		t.Fatalf("second answer's Content-Type = %q, want [application/json]", got)
	}
	if len(jsonContentType) != 1 || jsonContentType[0] != "application/json" {
		t.Fatalf("shared value changed to %q", jsonContentType)
	}
}
