package rawwire

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/arbiterhq/arbiter/errs"
)

// A client keeps the numbers of an answer exact: in an error's detail and
// in a generic result, a number is the server's literal (json.Number),
// never a float64 that rounds past 2^53 and prints 1e21 in exponent form.
func TestClientAnswersKeepNumbersExact(t *testing.T) {
	err := ReplyError("u", http.StatusConflict, []byte(`{"error":{"code":"conflict","message":"m","detail":{"fence":9007199254740993,"big":123456789012345678901234}}}`))
	var e *errs.Error
	if !errors.As(err, &e) || e.Detail["fence"] != json.Number("9007199254740993") || e.Detail["big"] != json.Number("123456789012345678901234") {
		t.Fatalf("detail %#v", e)
	}
	out, _ := json.Marshal(e.Detail)
	if string(out) != `{"big":123456789012345678901234,"fence":9007199254740993}` {
		t.Fatalf("re-encoded detail %s", out)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"seq":18446744073709551615,"n":9007199254740993}`))
	}))
	defer srv.Close()
	var res map[string]any
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := DoJSON(srv.Client(), req, &res); err != nil {
		t.Fatal(err)
	}
	if res["seq"] != json.Number("18446744073709551615") || res["n"] != json.Number("9007199254740993") {
		t.Fatalf("result %#v", res)
	}
}
