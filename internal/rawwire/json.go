package rawwire

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/arbiterhq/arbiter/errs"
)

// DoJSON sends req and decodes a 2xx JSON answer into out (if not nil);
// an error answer becomes its *errs.Error.
func DoJSON(c *http.Client, req *http.Request, out any) error {
	url := req.URL.String()
	resp, err := c.Do(req)
	if err != nil {
		return TransportError(url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxReplyBytes))
	if err != nil {
		return errs.Unknown("%s: reading reply: %v", url, err)
	}
	if resp.StatusCode/100 != 2 {
		return ReplyError(url, resp.StatusCode, raw)
	}
	if out != nil {
		if err := DecodeExact(raw, out); err != nil {
			return errs.Errorf(errs.CodeInternal, "%s: undecodable reply: %v", url, err)
		}
	}
	return nil
}

// DecodeExact decodes a JSON answer keeping every number exact: a number
// that lands in an interface (an error's detail, a generic result)
// becomes a json.Number with the server's literal, never a float64, which
// loses integers past 2^53 and prints 1e21 and above in exponent form.
func DecodeExact(raw []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(out)
}

// ReplyError turns a non-OK HTTP reply into an error: the JSON error body
// when there is one, else a code derived from the status.
func ReplyError(url string, status int, raw []byte) error {
	if status == http.StatusBadRequest && strings.HasPrefix(url, "http://") && bytes.Contains(raw, []byte(plainToTLS)) {
		// The TLS server refused the request before reading it.
		return errs.Errorf(errs.CodeUnavailable, "%s: the node speaks HTTPS (TLS), not plain HTTP: use an https:// address (and --ca for its CA)", url)
	}
	var body struct {
		Error *errs.Error `json:"error"`
	}
	if DecodeExact(raw, &body) == nil && body.Error != nil && errs.Known(body.Error.Code) {
		return body.Error
	}
	code := errs.CodeInternal
	switch {
	case status == http.StatusServiceUnavailable:
		code = errs.CodeUnavailable
	case status == http.StatusTooManyRequests:
		code = errs.CodeBackpressure
	case status == http.StatusNotFound:
		code = errs.CodeNotFound
	}
	return errs.Errorf(code, "%s: HTTP %d: %s", url, status, bytes.TrimSpace(raw[:min(len(raw), 200)]))
}

// TransportError classifies a failed HTTP call: a failed dial never
// reached the peer, so nothing was applied; any later failure leaves the
// outcome unknown.
func TransportError(url string, err error) error {
	var op *net.OpError
	var unknownCA x509.UnknownAuthorityError
	switch {
	case errors.Is(err, http.ErrSchemeMismatch):
		// The server answered the TLS handshake in plain HTTP: nothing
		// was sent, let alone applied.
		return errs.Errorf(errs.CodeUnavailable, "%s: the node speaks plain HTTP, not HTTPS: use an http:// address (or start the node with TLS)", url)
	case errors.As(err, &unknownCA):
		return errs.Errorf(errs.CodeUnavailable, "%s: the node's certificate is not signed by a CA this client trusts (give the nodes' CA: --ca, or client.WithCAFile): %v", url, err)
	case errors.As(err, &op) && op.Op == "dial":
		return errs.Errorf(errs.CodeUnavailable, "%s unreachable: %v", url, err)
	}
	return errs.Unknown("%s: %v", url, fmt.Sprint(err))
}

// plainToTLS is what net/http's TLS server writes, with status 400, to a
// client that sent plain HTTP: the one sign of that mistake on the wire.
const plainToTLS = "Client sent an HTTP request to an HTTPS server."
