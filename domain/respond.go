package domain

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/arbiterhq/arbiter/errs"
	"github.com/arbiterhq/arbiter/internal/strictjson"
)

// MaxBodyBytes bounds a JSON request body; larger ones are refused with
// 413.
const MaxBodyBytes = 1 << 20

// DecodeJSON reads exactly one JSON value of at most MaxBodyBytes into v:
// valid UTF-8 only, no field v does not declare, nothing after the value;
// numbers keep their literals (json.Number).
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := ReadBody(w, r, MaxBodyBytes)
	if err != nil {
		return err
	}
	if err := strictjson.Decode(body, v); err != nil {
		return errs.Errorf(errs.CodeInvalid, "malformed JSON body: %v", err)
	}
	return nil
}

// ReadBody reads a body of at most limit bytes.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, errs.Errorf(errs.CodeTooLarge, "request body exceeds %d bytes", limit)
		}
		return nil, errs.Errorf(errs.CodeInvalid, "reading body: %v", err)
	}
	return body, nil
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// WriteError answers {"error": {...}} with the status of its code (see
// errs.Status); 503 and 429 carry Retry-After.
func WriteError(w http.ResponseWriter, err error) {
	e := errs.From(err)
	status := errs.Status(e.Code)
	switch status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
	}
	WriteJSON(w, status, map[string]*errs.Error{"error": e})
}
