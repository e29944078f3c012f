package domain

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

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

// WriteJSON answers v as JSON with status. A v that appends its own JSON
// (JSONAppender) is written with it, in one write; anything else through
// encoding/json.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	if a, ok := v.(JSONAppender); ok {
		buf := replyBuffers.Get().(*[]byte)
		b := append(a.AppendJSON((*buf)[:0]), '\n') // as json.Encoder ends a value
		_, _ = w.Write(b)
		if cap(b) <= maxPooledReplyBytes {
			*buf = b
			replyBuffers.Put(buf)
		}
		return
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// jsonContentType is the header value of every JSON answer, shared:
// Header.Set would allocate a one-element slice for each. Nothing writes
// into a header's value slice in place (Header.Add appends, which copies
// a full slice), so sharing it is safe.
var jsonContentType = []string{"application/json"}

// JSONAppender is a hot answer that encodes itself: AppendJSON appends
// exactly what encoding/json's Encoder, HTML escaping off, would write of
// it, but the final newline.
type JSONAppender interface {
	AppendJSON(b []byte) []byte
}

// replyBuffers keeps the buffers of answers written by their
// JSONAppender, up to maxPooledReplyBytes each.
var replyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledReplyBytes = 64 << 10

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
